def check_examples(candidate):
    assert candidate([1, 3, 5], [2, 4, 6]) == [1, 2, 3, 4, 5, 6]
    assert candidate([1, 1], [1]) == [1, 1, 1]


def check_edges(candidate):
    assert candidate([], []) == []
    assert candidate([], [0]) == [0]
    assert candidate([0], []) == [0]
    assert candidate([-5, 10], [-7, 0, 20]) == [-7, -5, 0, 10, 20]
    assert candidate([1, 2, 3], [4, 5]) == [1, 2, 3, 4, 5]
