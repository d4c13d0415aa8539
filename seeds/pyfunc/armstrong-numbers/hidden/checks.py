def check_examples(candidate):
    assert candidate(100, 999) == [153, 370, 371, 407]
    assert candidate(10, 99) == []


def check_edges(candidate):
    assert candidate(1, 9) == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert candidate(0, 0) == [0]
    assert candidate(1000, 10000) == [1634, 8208, 9474]
    assert candidate(500, 400) == []
    assert candidate(371, 371) == [371]
    assert candidate(10000, 100000) == [54748, 92727, 93084]
