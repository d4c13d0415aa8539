def to_binary(n):
    """Return the binary representation of the integer n, without a prefix ('-' for negatives)."""
    raise NotImplementedError
