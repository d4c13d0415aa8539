def check_examples(candidate):
    assert candidate([4, 6, 2, 6, 4, 4]) == [4, 4, 4, 6, 6, 2]
    assert candidate([3, 1, 2]) == [1, 2, 3]


def check_edges(candidate):
    assert candidate([]) == []
    assert candidate([7]) == [7]
    assert candidate([5, 5, -1, -1, 0]) == [-1, -1, 5, 5, 0]
    assert candidate([2, 1, 2, 1, 3, 3, 3]) == [3, 3, 3, 1, 1, 2, 2]
