def missing_number(nums):
    """nums holds n distinct integers from 0..n; return the one that is missing."""
    n = len(nums)
    return n * (n + 1) // 2 - sum(nums)
