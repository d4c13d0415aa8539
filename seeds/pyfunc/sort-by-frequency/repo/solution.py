def sort_by_frequency(nums):
    """Sort nums by descending frequency of each value, ties by ascending value."""
    raise NotImplementedError
