def check_examples(candidate):
    assert candidate(16) == 7
    assert candidate(942) == 6


def check_edges(candidate):
    assert candidate(0) == 0
    assert candidate(9) == 9
    assert candidate(10) == 1
    assert candidate(18) == 9
    assert candidate(999999999999) == 9
    assert candidate(132189) == 6
    assert candidate(10**50 + 1) == 2
