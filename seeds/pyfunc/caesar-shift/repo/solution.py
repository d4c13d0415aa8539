def caesar(s, k):
    """Shift every ASCII letter of s by k places in the alphabet, wrapping around, keeping case."""
    raise NotImplementedError
