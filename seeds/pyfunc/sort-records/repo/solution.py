def sort_records(records):
    """Sort (name, score) tuples by score descending, then name ascending."""
    raise NotImplementedError
