def check_examples(candidate):
    assert candidate(6) == 8
    assert candidate(1) == 0


def check_edges(candidate):
    assert candidate(2) == 1
    assert candidate(3) == 7
    assert candidate(7) == 16
    assert candidate(27) == 111
    assert candidate(97) == 118
    assert candidate(2**60) == 60
