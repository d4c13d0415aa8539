def longest_run(s):
    """Return the length of the longest run of one repeated character in s (0 for '')."""
    raise NotImplementedError
