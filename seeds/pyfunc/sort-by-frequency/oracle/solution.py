def sort_by_frequency(nums):
    """Sort nums by descending frequency of each value, ties by ascending value."""
    counts = {}
    for x in nums:
        counts[x] = counts.get(x, 0) + 1
    return sorted(nums, key=lambda x: (-counts[x], x))
