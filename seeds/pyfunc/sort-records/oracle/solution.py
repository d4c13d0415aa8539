def sort_records(records):
    """Sort (name, score) tuples by score descending, then name ascending."""
    return sorted(records, key=lambda r: (-r[1], r[0]))
