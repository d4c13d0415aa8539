import pytest

from numerals import from_roman, parse_number, to_roman


@pytest.mark.parametrize(
    "text",
    ["IIII", "VV", "IC", "VX", "IL", "XM", "MMMM", "IIX", "XXXX", "CCCC", "DD", "LXL", "IXI",
     "iv", "", " X", "X ", "MCMC", "CMM"],
)
def test_rejects_non_canonical(text):
    with pytest.raises(ValueError):
        from_roman(text)


def test_every_canonical_roundtrips():
    for n in range(1, 4000):
        assert from_roman(to_roman(n)) == n


@pytest.mark.parametrize("n", [4000, 10000, -1, 1.0, 3.5, True, "5"])
def test_to_roman_range_and_type(n):
    with pytest.raises(ValueError):
        to_roman(n)


def test_parse_number_strict():
    assert parse_number(" MMXXIV ") == 2024
    assert type(parse_number("X")) is int
    with pytest.raises(ValueError):
        parse_number("IIII")
