def merge_sorted(a, b):
    """Merge two ascending lists into one ascending list holding all their items."""
    raise NotImplementedError
