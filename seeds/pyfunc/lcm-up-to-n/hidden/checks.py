def _want(n):
    out = 1
    for k in range(1, n + 1):
        out = math.lcm(out, k)
    return out


def check_examples(candidate):
    assert candidate(10) == 2520
    assert candidate(1) == 1


def check_edges(candidate):
    assert candidate(0) == 1
    assert candidate(2) == 2
    assert candidate(20) == 232792560
    assert candidate(50) == _want(50)
    assert candidate(200) == _want(200)
