def flatten(nested):
    """Return the non-list items of an arbitrarily nested list, in order, as one flat list."""
    out = []
    for item in nested:
        if isinstance(item, list):
            out.extend(flatten(item))
        else:
            out.append(item)
    return out
