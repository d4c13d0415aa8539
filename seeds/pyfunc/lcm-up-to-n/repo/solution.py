def lcm_upto(n):
    """Return the least common multiple of 1, 2, ..., n (1 for n = 0)."""
    raise NotImplementedError
