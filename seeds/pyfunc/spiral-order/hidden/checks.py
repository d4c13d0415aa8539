def check_examples(candidate):
    assert candidate([[1, 2, 3], [4, 5, 6], [7, 8, 9]]) == [1, 2, 3, 6, 9, 8, 7, 4, 5]
    assert candidate([[1], [2], [3]]) == [1, 2, 3]


def check_edges(candidate):
    assert candidate([]) == []
    assert candidate([[1]]) == [1]
    assert candidate([[1, 2, 3]]) == [1, 2, 3]
    assert candidate([[1, 2], [3, 4], [5, 6]]) == [1, 2, 4, 6, 5, 3]
    assert candidate([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]) == [
        1, 2, 3, 4, 8, 12, 11, 10, 9, 5, 6, 7
    ]
    assert candidate([[1, 2], [3, 4]]) == [1, 2, 4, 3]
