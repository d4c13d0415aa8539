def check_examples(candidate):
    assert candidate(["2", "1", "+", "3", "*"]) == 9
    assert candidate(["7", "-2", "/"]) == -3


def check_edges(candidate):
    assert candidate(["5"]) == 5
    assert candidate(["-7", "2", "/"]) == -3
    assert candidate(["3", "4", "-"]) == -1
    assert candidate(["2", "3", "4", "*", "-"]) == -10
    assert candidate(["4", "13", "5", "/", "+"]) == 6
    assert candidate(["1", "3", "/"]) == 0
    assert candidate(["-1", "3", "/"]) == 0


def check_big(candidate):
    assert candidate(["100000000000000000001", "3", "/"]) == 33333333333333333333
    assert candidate(["-100000000000000000001", "3", "/"]) == -33333333333333333333
    assert candidate(["99999999999999999999", "99999999999999999999", "*"]) == (10**20 - 1) ** 2
