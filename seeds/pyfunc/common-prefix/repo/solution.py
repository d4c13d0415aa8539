def common_prefix(words):
    """Return the longest string that is a prefix of every string in the list words."""
    raise NotImplementedError
