def count_pairs(nums, target):
    """Return how many index pairs i < j have nums[i] + nums[j] == target."""
    seen = {}
    total = 0
    for x in nums:
        total += seen.get(target - x, 0)
        seen[x] = seen.get(x, 0) + 1
    return total
