def check_examples(candidate):
    assert candidate("swiss") == "w"
    assert candidate("aabb") is None


def check_edges(candidate):
    assert candidate("") is None
    assert candidate("a") == "a"
    assert candidate("abcab") == "c"
    assert candidate("aA") == "a"
    assert candidate("xxyzz") == "y"
    assert candidate("zzzzzq") == "q"
