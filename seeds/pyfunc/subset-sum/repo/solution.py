def has_subset_sum(nums, target):
    """Return True if some subset of the non-negative integers nums sums to target."""
    raise NotImplementedError
