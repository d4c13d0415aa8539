from fractions import Fraction

import pytest

from arith import CalcError, ParseError, calculate


@pytest.mark.parametrize(
    "text, value",
    [("1+2*3", 7), ("(1+2)*3", 9), ("7/2", Fraction(7, 2)), ("2**3", 8), ("-3*2", -6),
     ("0.1+0.2", Fraction(3, 10))],
)
def test_values(text, value):
    assert calculate(text) == value


@pytest.mark.parametrize("text", ["", "1+", "(1", "1 2", ")", "*3"])
def test_parse_errors(text):
    with pytest.raises(ParseError):
        calculate(text)


def test_calc_errors():
    with pytest.raises(CalcError):
        calculate("1/0")
    with pytest.raises(CalcError):
        calculate("4**0.5")
