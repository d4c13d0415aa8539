def check_examples(candidate):
    assert candidate(12) == 6
    assert candidate(13) == 2


def check_edges(candidate):
    assert candidate(1) == 1
    assert candidate(36) == 9
    assert candidate(1000000) == 49
    assert candidate(997) == 2
    assert candidate(999999999989) == 2
    assert candidate(2**39) == 40


def check_range(candidate):
    for n in range(1, 200):
        assert candidate(n) == sum(1 for d in range(1, n + 1) if n % d == 0), n
