def merge_counts(a, b):
    """Return a new dict with, for every key of a or b, the sum of its values (missing = 0)."""
    out = dict(a)
    for key, value in b.items():
        out[key] = out.get(key, 0) + value
    return out
