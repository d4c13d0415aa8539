def check_examples(candidate):
    assert candidate({"a": 1, "b": 2, "c": 1}) == {1: ["a", "c"], 2: ["b"]}
    assert candidate({}) == {}


def check_edges(candidate):
    assert candidate({"x": "y"}) == {"y": ["x"]}
    assert candidate({"b": 0, "a": 0}) == {0: ["a", "b"]}
    assert candidate({"k1": (1, 2), "k0": (1, 2), "z": None}) == {
        (1, 2): ["k0", "k1"],
        None: ["z"],
    }
