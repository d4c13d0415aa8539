def first_unique_char(s):
    """Return the first character of s that occurs exactly once in s, or None."""
    counts = {}
    for ch in s:
        counts[ch] = counts.get(ch, 0) + 1
    for ch in s:
        if counts[ch] == 1:
            return ch
    return None
