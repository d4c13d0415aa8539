def check_examples(candidate):
    assert candidate([1, 2, 3, 4, 5], 2) == [4, 5, 1, 2, 3]
    assert candidate([1, 2, 3], 7) == [3, 1, 2]


def check_edges(candidate):
    assert candidate([1, 2, 3], 0) == [1, 2, 3]
    assert candidate([1, 2, 3], 3) == [1, 2, 3]
    assert candidate([], 4) == []
    assert candidate(["a"], 100) == ["a"]
    assert candidate(["a", "b"], 1) == ["b", "a"]
    assert candidate(list(range(10)), 10**12 + 3) == [7, 8, 9, 0, 1, 2, 3, 4, 5, 6]
