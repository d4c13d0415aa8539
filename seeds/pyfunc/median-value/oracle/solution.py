def median(nums):
    """Return the median of a non-empty list of numbers as a float."""
    s = sorted(nums)
    mid = len(s) // 2
    if len(s) % 2:
        return float(s[mid])
    return (s[mid - 1] + s[mid]) / 2
