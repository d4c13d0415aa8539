def check_examples(candidate):
    assert candidate(12) == [2, 2, 3]
    assert candidate(97) == [97]


def check_edges(candidate):
    assert candidate(2) == [2]
    assert candidate(360) == [2, 2, 2, 3, 3, 5]
    assert candidate(2**10) == [2] * 10
    assert candidate(2 * 999983) == [2, 999983]
    assert candidate(600851475143) == [71, 839, 1471, 6857]


def check_range(candidate):
    for n in range(2, 300):
        factors = candidate(n)
        assert math.prod(factors) == n, n
        assert factors == sorted(factors), n
        assert all(all(f % d for d in range(2, f)) for f in factors), n
