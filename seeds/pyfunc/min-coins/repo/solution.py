def min_coins(coins, amount):
    """Return the fewest coins summing to amount (unlimited coins of each value), or -1."""
    raise NotImplementedError
