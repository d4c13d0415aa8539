def common_prefix(words):
    """Return the longest string that is a prefix of every string in the list words."""
    if not words:
        return ""
    prefix = words[0]
    for word in words[1:]:
        while not word.startswith(prefix):
            prefix = prefix[:-1]
    return prefix
