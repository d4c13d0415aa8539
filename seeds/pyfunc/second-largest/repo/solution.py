def second_largest(nums):
    """Return the second largest distinct value of nums, or None if there is none."""
    raise NotImplementedError
