def gcd_of_list(nums):
    """Return the greatest common divisor (>= 0) of a non-empty list of integers."""
    raise NotImplementedError
