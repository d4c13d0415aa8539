def check_examples(candidate):
    assert candidate([[1, 2, 3], [4, 5, 6]]) == [[1, 4], [2, 5], [3, 6]]
    assert candidate([]) == []


def check_edges(candidate):
    assert candidate([[1]]) == [[1]]
    assert candidate([[1, 2]]) == [[1], [2]]
    assert candidate([[1], [2]]) == [[1, 2]]
    assert candidate([["a", "b"], ["c", "d"]]) == [["a", "c"], ["b", "d"]]
