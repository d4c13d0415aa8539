def check_examples(candidate):
    assert candidate(123) == 6
    assert candidate(-45) == 9


def check_edges(candidate):
    assert candidate(0) == 0
    assert candidate(10**30) == 1
    assert candidate(999999) == 54
