def check_examples(candidate):
    assert candidate("aaabbc") == 3
    assert candidate("") == 0


def check_edges(candidate):
    assert candidate("a") == 1
    assert candidate("abc") == 1
    assert candidate("abbbbcdddd") == 4
    assert candidate("xxyyyy") == 4
    assert candidate("aAaA") == 1
    assert candidate("ab" + "c" * 1000 + "ab") == 1000
