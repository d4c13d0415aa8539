import pytest

from userdb import Group, read_groups


def test_read_groups():
    assert read_groups("wheel:10:root,ann\nusers:100:\n") == [
        Group("wheel", 10, ["root", "ann"]),
        Group("users", 100, []),
    ]


def test_wrong_field_count():
    with pytest.raises(ValueError, match="line 1"):
        read_groups("wheel:10\n")
