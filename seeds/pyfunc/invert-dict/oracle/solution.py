def invert(d):
    """Map each value of d to the sorted list of keys that have it."""
    out = {}
    for key, value in d.items():
        out.setdefault(value, []).append(key)
    return {value: sorted(keys) for value, keys in out.items()}
