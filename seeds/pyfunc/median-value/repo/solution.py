def median(nums):
    """Return the median of a non-empty list of numbers as a float."""
    raise NotImplementedError
