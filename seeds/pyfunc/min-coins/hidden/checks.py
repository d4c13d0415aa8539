def _want(coins, amount):
    best = [0] + [None] * amount
    for a in range(1, amount + 1):
        options = [best[a - c] for c in coins if c <= a and best[a - c] is not None]
        best[a] = min(options) + 1 if options else None
    return -1 if best[amount] is None else best[amount]


def check_examples(candidate):
    assert candidate([1, 2, 5], 11) == 3
    assert candidate([2], 3) == -1


def check_edges(candidate):
    assert candidate([1], 0) == 0
    assert candidate([], 0) == 0
    assert candidate([], 5) == -1
    assert candidate([1, 3, 4], 6) == 2
    assert candidate([5, 10], 3) == -1
    assert candidate([25, 10, 1], 30) == 3


def check_larger(candidate):
    assert candidate([7, 11, 13], 1000) == _want([7, 11, 13], 1000)
    assert candidate([97, 41, 3], 2023) == _want([97, 41, 3], 2023)
    assert candidate([6, 10, 15], 7) == -1
