def check_examples(candidate):
    assert candidate("kitten", "sitting") == 3
    assert candidate("", "abc") == 3


def check_edges(candidate):
    assert candidate("abc", "") == 3
    assert candidate("", "") == 0
    assert candidate("same", "same") == 0
    assert candidate("flaw", "lawn") == 2
    assert candidate("intention", "execution") == 5
    assert candidate("ab", "ba") == 2
    assert candidate("a", "A") == 1


def check_long(candidate):
    assert candidate("a" * 400, "a" * 399 + "b") == 1
    assert candidate("ab" * 150, "ba" * 150) == 2
