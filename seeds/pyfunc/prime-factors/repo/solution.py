def prime_factors(n):
    """Return the prime factors of n >= 2 in ascending order, with multiplicity."""
    raise NotImplementedError
