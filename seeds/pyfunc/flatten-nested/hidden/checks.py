def check_examples(candidate):
    assert candidate([1, [2, [3, [4]], 5]]) == [1, 2, 3, 4, 5]
    assert candidate([[], [[]]]) == []


def check_edges(candidate):
    assert candidate([]) == []
    assert candidate(["a", ["bc"], "d"]) == ["a", "bc", "d"]
    assert candidate([[1, 2], [3, [4, [5, [6, [7]]]]]]) == [1, 2, 3, 4, 5, 6, 7]
    assert candidate([(1, 2), [3]]) == [(1, 2), 3]
    assert candidate([None, [False, [0]]]) == [None, False, 0]
