def longest_run(s):
    """Return the length of the longest run of one repeated character in s (0 for '')."""
    best = run = 0
    prev = None
    for ch in s:
        run = run + 1 if ch == prev else 1
        prev = ch
        best = max(best, run)
    return best
