def check_examples(candidate):
    assert candidate(97) is True
    assert candidate(91) is False
    assert candidate(1) is False


def check_edges(candidate):
    assert candidate(2) is True
    assert candidate(0) is False
    assert candidate(-7) is False
    assert candidate(7919) is True
    assert candidate(2**31 - 1) is True
    assert candidate(1000003 * 1000033) is False


def check_small(candidate):
    sieve = [False, False] + [True] * 499
    for i in range(2, 23):
        for j in range(i * i, 501, i):
            sieve[j] = False
    assert [n for n in range(501) if candidate(n)] == [n for n in range(501) if sieve[n]]
