def dedupe(items):
    """Return a new list of the items without repeats, keeping each first occurrence in order."""
    raise NotImplementedError
