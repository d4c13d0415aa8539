def rotate_right(items, k):
    """Return a new list: items rotated k places to the right (k >= 0, may exceed the length)."""
    raise NotImplementedError
