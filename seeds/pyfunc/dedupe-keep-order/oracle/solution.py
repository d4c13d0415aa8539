def dedupe(items):
    """Return a new list of the items without repeats, keeping each first occurrence in order."""
    seen = set()
    out = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out
