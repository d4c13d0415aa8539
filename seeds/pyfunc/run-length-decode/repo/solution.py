def rle_decode(s):
    """Decode a run-length string such as '3a1b2c' (a count, then one non-digit character)."""
    raise NotImplementedError
