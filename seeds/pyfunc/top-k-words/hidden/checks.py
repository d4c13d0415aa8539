def check_examples(candidate):
    assert candidate("b a c b a b", 2) == ["b", "a"]
    assert candidate("x y z", 5) == ["x", "y", "z"]


def check_edges(candidate):
    assert candidate("", 3) == []
    assert candidate("a b c d", 0) == []
    assert candidate("The the THE cat, cat; dog!", 2) == ["the", "cat"]
    assert candidate("zeta alpha zeta alpha mid", 3) == ["alpha", "zeta", "mid"]
    assert candidate("it's 2 it", 1) == ["it"]
