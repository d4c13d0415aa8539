def min_coins(coins, amount):
    """Return the fewest coins summing to amount (unlimited coins of each value), or -1."""
    inf = float("inf")
    best = [0] + [inf] * amount
    for a in range(1, amount + 1):
        for c in coins:
            if c <= a and best[a - c] + 1 < best[a]:
                best[a] = best[a - c] + 1
    return -1 if best[amount] == inf else int(best[amount])
