def check_examples(candidate):
    assert candidate({"a": 1, "b": 2}, {"b": 3, "c": 4}) == {"a": 1, "b": 5, "c": 4}
    assert candidate({"x": -1}, {"x": 1}) == {"x": 0}


def check_edges(candidate):
    assert candidate({}, {}) == {}
    assert candidate({"x": 1}, {}) == {"x": 1}
    assert candidate({}, {"y": -3}) == {"y": -3}
    assert candidate({"a": 0}, {"b": 0}) == {"a": 0, "b": 0}
