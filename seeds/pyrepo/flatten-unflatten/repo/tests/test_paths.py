import pytest

from dotted import get_path


def test_get_path():
    data = {"a": {"b": [10, {"c": 3}]}}
    assert get_path(data, "a.b.1.c") == 3
    assert get_path(data, "a.b.5", default=None) is None
    with pytest.raises(KeyError):
        get_path(data, "a.x")
