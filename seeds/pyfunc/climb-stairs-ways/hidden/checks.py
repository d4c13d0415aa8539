def _brute(n, steps):
    if n == 0:
        return 1
    return sum(_brute(n - s, steps) for s in steps if s <= n)


def check_examples(candidate):
    assert candidate(4, [1, 2]) == 5
    assert candidate(3, [2]) == 0


def check_edges(candidate):
    assert candidate(0, [1, 2]) == 1
    assert candidate(0, [5]) == 1
    assert candidate(5, [1, 2, 3]) == 13
    assert candidate(7, [10]) == 0
    assert candidate(12, [3, 1, 5]) == _brute(12, [3, 1, 5])


def check_large(candidate):
    a, b = 0, 1
    for _ in range(201):
        a, b = b, a + b
    assert candidate(200, [1, 2]) == a
