def check_examples(candidate):
    assert candidate([1, 2, 3, 4]) == [1, 3, 6, 10]
    assert candidate([]) == []


def check_edges(candidate):
    assert candidate([5]) == [5]
    assert candidate([3, -3, 3]) == [3, 0, 3]
    assert candidate([0, 0]) == [0, 0]
    assert candidate([10**20, 10**20]) == [10**20, 2 * 10**20]
