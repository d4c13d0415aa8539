def check_examples(candidate):
    assert candidate(6) is True
    assert candidate(12) is False


def check_edges(candidate):
    assert candidate(1) is False
    assert candidate(28) is True
    assert candidate(496) is True
    assert candidate(8128) is True
    assert candidate(27) is False
    assert candidate(24) is False
    assert candidate(2) is False


def check_range(candidate):
    assert [n for n in range(1, 2000) if candidate(n)] == [6, 28, 496]
