import pytest

from cronexpr import parse_field


def test_star_and_lists():
    assert parse_field("*", 0, 3) == {0, 1, 2, 3}
    assert parse_field("1,3", 0, 5) == {1, 3}


def test_out_of_range():
    with pytest.raises(ValueError):
        parse_field("60", 0, 59)
    with pytest.raises(ValueError):
        parse_field("x", 0, 59)
