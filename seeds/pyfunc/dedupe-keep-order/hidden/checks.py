def check_examples(candidate):
    assert candidate([3, 1, 3, 2, 1]) == [3, 1, 2]
    assert candidate(["b", "a", "b"]) == ["b", "a"]


def check_edges(candidate):
    assert candidate([]) == []
    assert candidate([0, 0, 0]) == [0]
    assert candidate([5]) == [5]
    assert candidate(list(range(10, 0, -1)) * 2) == list(range(10, 0, -1))
    assert candidate(["x", "X", "x"]) == ["x", "X"]
