import pytest

from numerals import from_roman, to_roman


@pytest.mark.parametrize(
    "n, text", [(1, "I"), (4, "IV"), (9, "IX"), (14, "XIV"), (1994, "MCMXCIV"), (3999, "MMMCMXCIX")]
)
def test_both_ways(n, text):
    assert to_roman(n) == text
    assert from_roman(text) == n


def test_zero():
    with pytest.raises(ValueError):
        to_roman(0)


def test_bad_digit():
    with pytest.raises(ValueError):
        from_roman("XIZ")
