def check_examples(candidate):
    assert candidate([3, 1, 2]) == 2.0
    assert candidate([4, 1, 3, 2]) == 2.5


def check_edges(candidate):
    assert candidate([5]) == 5.0
    assert candidate([1, 1]) == 1.0
    assert candidate([-5, 10]) == 2.5
    assert candidate([0.5, 0.25]) == 0.375
    assert candidate([9, 1, 8, 2, 7]) == 7.0


def check_type(candidate):
    assert type(candidate([3, 1, 2])) is float
    assert type(candidate([2, 4])) is float
