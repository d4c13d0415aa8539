def flatten(nested):
    """Return the non-list items of an arbitrarily nested list, in order, as one flat list."""
    raise NotImplementedError
