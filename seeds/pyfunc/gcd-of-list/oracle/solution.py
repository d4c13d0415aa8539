def gcd_of_list(nums):
    """Return the greatest common divisor (>= 0) of a non-empty list of integers."""
    g = 0
    for x in nums:
        a, b = abs(g), abs(x)
        while b:
            a, b = b, a % b
        g = a
    return g
