def check_examples(candidate):
    assert candidate("The cat and the hat.") == {"the": 2, "cat": 1, "and": 1, "hat": 1}
    assert candidate("") == {}


def check_edges(candidate):
    assert candidate("123 !!") == {}
    assert candidate("Don't stop") == {"don": 1, "t": 1, "stop": 1}
    assert candidate("a-b a_b AB") == {"a": 2, "b": 2, "ab": 1}
    assert candidate("na\u00efve") == {"na": 1, "ve": 1}
    assert candidate("x2y x") == {"x": 2, "y": 1}
