def digit_sum(n):
    """Return the sum of the decimal digits of n (the sign is ignored)."""
    return sum(int(d) for d in str(abs(n)))
