def check_examples(candidate):
    assert candidate(3, 4, 5) == "scalene"
    assert candidate(3, 3, 5) == "isosceles"
    assert candidate(1, 2, 3) == "invalid"


def check_edges(candidate):
    assert candidate(3, 3, 3) == "equilateral"
    assert candidate(5, 3, 3) == "isosceles"
    assert candidate(10, 1, 10) == "isosceles"
    assert candidate(0, 0, 0) == "invalid"
    assert candidate(-1, 2, 2) == "invalid"
    assert candidate(1, 1, 3) == "invalid"
    assert candidate(3, 1, 1) == "invalid"
    assert candidate(2, 3, 4) == "scalene"
