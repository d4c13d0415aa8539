def max_subarray(nums):
    """Return the largest sum of a non-empty contiguous subarray of nums."""
    raise NotImplementedError
