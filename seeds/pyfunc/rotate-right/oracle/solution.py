def rotate_right(items, k):
    """Return a new list: items rotated k places to the right (k >= 0, may exceed the length)."""
    if not items:
        return []
    k %= len(items)
    return items[len(items) - k:] + items[:len(items) - k]
