def is_perfect(n):
    """Return True if the positive integer n equals the sum of its proper divisors."""
    raise NotImplementedError
