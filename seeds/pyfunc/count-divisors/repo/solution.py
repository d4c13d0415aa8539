def count_divisors(n):
    """Return the number of positive divisors of the positive integer n."""
    raise NotImplementedError
