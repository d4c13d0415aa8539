def check_examples(candidate):
    assert candidate("aaabcc") == "3a1b2c"
    assert candidate("z" * 12) == "12z"


def check_edges(candidate):
    assert candidate("") == ""
    assert candidate("a") == "1a"
    assert candidate("abab") == "1a1b1a1b"
    assert candidate("  x") == "2 1x"
    assert candidate("AAaa") == "2A2a"
    assert candidate("b" * 100 + "c") == "100b1c"
