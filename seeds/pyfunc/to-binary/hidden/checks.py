def check_examples(candidate):
    assert candidate(5) == "101"
    assert candidate(0) == "0"
    assert candidate(-6) == "-110"


def check_edges(candidate):
    assert candidate(1) == "1"
    assert candidate(-1) == "-1"
    assert candidate(255) == "11111111"
    assert candidate(2**40) == "1" + "0" * 40
    assert candidate(-(2**70 + 1)) == "-1" + "0" * 69 + "1"
