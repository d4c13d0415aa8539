from dotted import flatten


def test_nested():
    data = {"a": {"b": [10, {"c": True}]}, "d": None}
    assert flatten(data) == {"a.b.0": 10, "a.b.1.c": True, "d": None}


def test_empty_containers_are_leaves():
    assert flatten({"a": {}, "b": []}) == {"a": {}, "b": []}


def test_separator():
    assert flatten({"x": {"y": 1}}, sep="/") == {"x/y": 1}
