def check_examples(candidate):
    assert candidate([0, 1, 0, 3, 12]) == [1, 3, 12, 0, 0]
    assert candidate([]) == []


def check_edges(candidate):
    assert candidate([0, 0]) == [0, 0]
    assert candidate([1, 2]) == [1, 2]
    assert candidate([0, -1, 0, -2]) == [-1, -2, 0, 0]
    assert candidate([5, 0, 4, 0, 3]) == [5, 4, 3, 0, 0]
