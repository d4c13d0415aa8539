def check_examples(candidate):
    assert candidate([3, 34, 4, 12, 5, 2], 9) is True
    assert candidate([3, 34, 4, 12, 5, 2], 30) is False


def check_edges(candidate):
    assert candidate([], 0) is True
    assert candidate([], 1) is False
    assert candidate([5], 5) is True
    assert candidate([1, 2], 4) is False
    assert candidate([2, 4, 6], 5) is False
    assert candidate([0, 0, 7], 7) is True
    assert candidate([4], 8) is False


def check_large(candidate):
    assert candidate([3] * 60, 61) is False
    assert candidate([3] * 60, 60) is True
    assert candidate(list(range(1, 101)), 5050) is True
    assert candidate(list(range(2, 202, 2)), 5051) is False
