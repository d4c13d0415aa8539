def count_pairs(nums, target):
    """Return how many index pairs i < j have nums[i] + nums[j] == target."""
    raise NotImplementedError
