def collatz_steps(n):
    """Return how many Collatz steps take the positive integer n to 1."""
    raise NotImplementedError
