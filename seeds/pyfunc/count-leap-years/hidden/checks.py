def _leap(y):
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)


def check_examples(candidate):
    assert candidate(1996, 2004) == 3
    assert candidate(1900, 1900) == 0


def check_edges(candidate):
    assert candidate(2000, 2000) == 1
    assert candidate(2001, 2003) == 0
    assert candidate(2024, 2020) == 0
    assert candidate(1, 400) == 97
    assert candidate(1, 10**12) == 10**12 // 4 - 10**12 // 100 + 10**12 // 400


def check_range(candidate):
    for start in range(1690, 1710):
        for end in range(1790, 1810, 3):
            assert candidate(start, end) == sum(_leap(y) for y in range(start, end + 1))
