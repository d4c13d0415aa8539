def invert(d):
    """Map each value of d to the sorted list of keys that have it."""
    raise NotImplementedError
