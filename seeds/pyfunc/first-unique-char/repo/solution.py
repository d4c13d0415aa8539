def first_unique_char(s):
    """Return the first character of s that occurs exactly once in s, or None."""
    raise NotImplementedError
