def check_examples(candidate):
    assert candidate([12, 18, 24]) == 6
    assert candidate([-4, 6]) == 2


def check_edges(candidate):
    assert candidate([7]) == 7
    assert candidate([-9]) == 9
    assert candidate([0, 5]) == 5
    assert candidate([0, 0]) == 0
    assert candidate([17, 34, 51]) == 17
    assert candidate([2**40 * 3, 2**35 * 9]) == 2**35 * 3
