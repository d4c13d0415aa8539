def ways_to_climb(n, steps):
    """Count ordered sequences of allowed step sizes that sum to n (1 for n = 0)."""
    ways = [1] + [0] * n
    for i in range(1, n + 1):
        ways[i] = sum(ways[i - s] for s in steps if s <= i)
    return ways[n]
