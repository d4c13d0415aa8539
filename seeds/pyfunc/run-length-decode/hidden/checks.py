def check_examples(candidate):
    assert candidate("3a1b2c") == "aaabcc"
    assert candidate("12z") == "z" * 12


def check_edges(candidate):
    assert candidate("") == ""
    assert candidate("1 2-") == " --"
    assert candidate("10a1b") == "a" * 10 + "b"
    assert candidate("0x1y") == "y"
    assert candidate("2.3,") == "..,,,"
    assert candidate("100q") == "q" * 100
