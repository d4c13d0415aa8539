def rle_encode(s):
    """Return the run-length encoding of s: each run of a character as its count then the character."""
    raise NotImplementedError
