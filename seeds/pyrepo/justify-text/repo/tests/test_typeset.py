import pytest

from typeset import align_center, align_right, justify, wrap


def test_wrap():
    assert wrap("the quick brown fox jumps", 10) == [["the", "quick"], ["brown", "fox"], ["jumps"]]
    assert wrap("", 5) == []
    with pytest.raises(ValueError):
        wrap("x", 0)


def test_wrap_long_word():
    assert wrap("a extraordinary b", 5) == [["a"], ["extraordinary"], ["b"]]


def test_align():
    assert align_right("ab", 5) == "   ab"
    assert align_center("ab", 5) == " ab  "


def test_justify_even_gaps():
    assert justify("aa bb cc dd ee", 10)[0] == "aa  bb  cc"
