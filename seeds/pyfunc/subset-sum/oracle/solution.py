def has_subset_sum(nums, target):
    """Return True if some subset of the non-negative integers nums sums to target."""
    reachable = {0}
    for x in nums:
        reachable |= {r + x for r in reachable if r + x <= target}
    return target in reachable
