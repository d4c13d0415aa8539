"""A renamed public name: the old one answers with the new one's value, and warns."""

from __future__ import annotations

import pytest

from gym._core._renamed import renamed


def new_name() -> str:
    return "new"


def test_the_old_name_gives_the_new_value_with_a_warning_naming_it():
    getattr_ = renamed("gym.example", {"old_name": "new_name"}, globals())
    with pytest.warns(
        DeprecationWarning, match=r"gym\.example\.old_name is renamed gym\.example\.new_name"
    ):
        assert getattr_("old_name") is new_name


def test_any_other_name_is_still_an_attribute_error():
    getattr_ = renamed("gym.example", {"old_name": "new_name"}, globals())
    with pytest.raises(AttributeError, match="'gym.example' has no attribute 'other'"):
        getattr_("other")
