def check_examples(candidate):
    assert candidate([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]
    assert candidate([], 3) == []


def check_edges(candidate):
    assert candidate([1, 2, 3], 3) == [[1, 2, 3]]
    assert candidate([1, 2], 5) == [[1, 2]]
    assert candidate(["a", "b", "c", "d"], 1) == [["a"], ["b"], ["c"], ["d"]]
    assert candidate(list(range(7)), 3) == [[0, 1, 2], [3, 4, 5], [6]]
