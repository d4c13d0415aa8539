import pytest

from dotted import flatten, unflatten


def test_dicts():
    assert unflatten({"a.b": 1, "a.c": 2, "d": 3}) == {"a": {"b": 1, "c": 2}, "d": 3}


def test_lists_in_index_order():
    result = unflatten({"xs.2": "c", "xs.0": "a", "xs.1": "b"})
    assert result == {"xs": ["a", "b", "c"]}
    assert type(result["xs"]) is list


def test_non_contiguous_digits_stay_dict():
    assert unflatten({"a.1": "x"}) == {"a": {"1": "x"}}
    assert unflatten({"a.0": "x", "a.2": "y"}) == {"a": {"0": "x", "2": "y"}}
    assert unflatten({"a.0": "x", "a.b": "y"}) == {"a": {"0": "x", "b": "y"}}


def test_empty_leaves_and_none():
    assert unflatten({"a": {}, "b": [], "c": None}) == {"a": {}, "b": [], "c": None}
    assert unflatten({}) == {}


def test_conflicts():
    with pytest.raises(ValueError):
        unflatten({"a": 1, "a.b": 2})
    with pytest.raises(ValueError):
        unflatten({"a.b": 2, "a": 1})


def test_separator():
    assert unflatten({"x/y/0": 1, "x/y/1": 2, "x.z": 3}, sep="/") == {"x": {"y": [1, 2]}, "x.z": 3}


def test_roundtrip():
    data = {
        "name": "svc",
        "ports": [80, 443],
        "env": {"DEBUG": False, "paths": [{"p": "/a"}, {"p": "/b", "extra": []}]},
        "meta": {},
        "matrix": [[1, 2], [3, [4, 5]]],
    }
    for sep in (".", "/"):
        assert unflatten(flatten(data, sep), sep) == data
