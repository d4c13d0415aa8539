def chunks(items, n):
    """Split items into consecutive lists of length n (the last may be shorter)."""
    raise NotImplementedError
