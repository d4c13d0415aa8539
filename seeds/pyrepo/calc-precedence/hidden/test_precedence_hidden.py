from fractions import Fraction

import pytest

from arith import CalcError, ParseError, calculate


@pytest.mark.parametrize(
    "text, value",
    [
        ("8-3-2", 3),
        ("8/4/2", 1),
        ("2-3+4", 3),
        ("1-2*3-4", -9),
        ("100/10*2", 20),
        ("2*3/4*2", 3),
        ("10-2-3-4", 1),
    ],
)
def test_left_associative(text, value):
    assert calculate(text) == value


@pytest.mark.parametrize(
    "text, value",
    [
        ("2**3**2", 512),
        ("-2**2", -4),
        ("(-2)**2", 4),
        ("2**-1", Fraction(1, 2)),
        ("2**-3**2", Fraction(1, 512)),
        ("-3**2*2", -18),
        ("2*-3**2", -18),
        ("(1+1)**(1+2)**(1+1)", 512),
    ],
)
def test_power(text, value):
    assert calculate(text) == value


@pytest.mark.parametrize(
    "text, value", [("+3", 3), ("-+-3", 3), ("--3", 3), ("4*+2", 8), ("1 - -1", 2)]
)
def test_unary_signs(text, value):
    assert calculate(text) == value


def test_result_type():
    assert type(calculate("8-3-2")) is Fraction


@pytest.mark.parametrize("text", ["2**", "**2", "+", "1-", "2*(3-)", "(2)(3)"])
def test_still_rejected(text):
    with pytest.raises(ParseError):
        calculate(text)


def test_eval_errors():
    with pytest.raises(CalcError):
        calculate("1/(2-2)")
    with pytest.raises(CalcError):
        calculate("0**-1")
    with pytest.raises(CalcError):
        calculate("2**(1/2)")
