def is_prime(n):
    """Return True if the integer n is prime, otherwise False."""
    raise NotImplementedError
