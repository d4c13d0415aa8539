import pytest

from tally import Money, split


def test_even_split():
    assert split(Money("9.00"), 3) == [Money("3.00")] * 3


def test_single_part():
    assert split(Money("7.77", "USD"), 1) == [Money("7.77", "USD")]


def test_zero_parts():
    with pytest.raises(ValueError):
        split(Money("1.00"), 0)
