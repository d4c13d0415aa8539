def ways_to_climb(n, steps):
    """Count ordered sequences of allowed step sizes that sum to n (1 for n = 0)."""
    raise NotImplementedError
