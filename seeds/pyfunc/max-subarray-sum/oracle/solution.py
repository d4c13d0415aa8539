def max_subarray(nums):
    """Return the largest sum of a non-empty contiguous subarray of nums."""
    best = cur = nums[0]
    for x in nums[1:]:
        cur = max(x, cur + x)
        best = max(best, cur)
    return best
