def check_examples(candidate):
    assert candidate([("bob", 3), ("amy", 5), ("cal", 3)]) == [
        ("amy", 5), ("bob", 3), ("cal", 3)
    ]
    assert candidate([]) == []


def check_edges(candidate):
    assert candidate([("x", 1)]) == [("x", 1)]
    assert candidate([("b", 0), ("a", 0), ("c", -1)]) == [("a", 0), ("b", 0), ("c", -1)]
    assert candidate([("a", -5), ("b", 10), ("B", 10)]) == [("B", 10), ("b", 10), ("a", -5)]
