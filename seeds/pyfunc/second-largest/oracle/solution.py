def second_largest(nums):
    """Return the second largest distinct value of nums, or None if there is none."""
    distinct = sorted(set(nums))
    return distinct[-2] if len(distinct) >= 2 else None
