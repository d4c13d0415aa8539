def merge_counts(a, b):
    """Return a new dict with, for every key of a or b, the sum of its values (missing = 0)."""
    raise NotImplementedError
