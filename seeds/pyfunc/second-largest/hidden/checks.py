def check_examples(candidate):
    assert candidate([3, 1, 4, 1, 5]) == 4
    assert candidate([5, 5, 5]) is None


def check_edges(candidate):
    assert candidate([]) is None
    assert candidate([7]) is None
    assert candidate([2, 1]) == 1
    assert candidate([-1, -2, -3]) == -2
    assert candidate([10, 10, 9]) == 9
    assert candidate([1, 2, 2]) == 1
