def move_zeros(nums):
    """Return a new list with every zero of nums moved to the end, other items in order."""
    raise NotImplementedError
