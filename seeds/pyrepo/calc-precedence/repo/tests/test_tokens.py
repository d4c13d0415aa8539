from fractions import Fraction

import pytest

from arith import ParseError, tokenize


def test_tokenize():
    assert tokenize(" 2 ** (1.5+3") == [
        Fraction(2), "**", "(", Fraction(3, 2), "+", Fraction(3),
    ]


def test_bad_character():
    with pytest.raises(ParseError):
        tokenize("2 % 3")
