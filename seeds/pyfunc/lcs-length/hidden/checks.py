def check_examples(candidate):
    assert candidate("abcde", "ace") == 3
    assert candidate("abc", "def") == 0


def check_edges(candidate):
    assert candidate("", "abc") == 0
    assert candidate("abc", "") == 0
    assert candidate("abc", "abc") == 3
    assert candidate("AGGTAB", "GXTXAYB") == 4
    assert candidate("aaaa", "aa") == 2
    assert candidate("abc", "cba") == 1
    assert candidate("Ab", "ab") == 1


def check_long(candidate):
    a = "ab" * 200
    b = "ba" * 200
    assert candidate(a, b) == 399
    assert candidate("x" * 300, "y" * 300) == 0
