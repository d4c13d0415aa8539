from decimal import Decimal

import pytest

from gridfmt import format_table

ROWS = [["apple", 3, 0.5], ["kiwi", 12, None], ["fig", 100, 2.25]]


def test_explicit_alignment():
    table = format_table(ROWS, ["fruit", "n", "price"], align="lrc")
    assert table.split("\n") == [
        "fruit |   n | price",
        "------+-----+------",
        "apple |   3 | 0.50 ",
        "kiwi  |  12 |      ",
        "fig   | 100 | 2.25 ",
    ]


def test_centre_odd_padding_goes_right():
    assert format_table([["ab"]], ["wide!"], align="c").split("\n")[2] == " ab  "
    assert format_table([["abc"]], ["x"], align="c") == " x \n---\nabc"


def test_auto():
    rows = [["a", 1, True, Decimal("1.5"), None], ["bb", 2.5, False, 7, None]]
    table = format_table(rows, ["k", "num", "flag", "dec", "empty"], align="auto")
    assert table.split("\n") == [
        "k  |  num | flag  | dec | empty",
        "---+------+-------+-----+------",
        "a  |    1 | True  | 1.5 |      ",
        "bb | 2.50 | False |   7 |      ",
    ]


def test_auto_mixed_column_stays_left():
    table = format_table([[1], ["x"], [None]], ["v"], align="auto")
    assert table == "v\n-\n1\nx\n "


def test_default_unchanged():
    expected = "fruit | n \n------+---\napple | 3 \nkiwi  | 12"
    assert format_table([["apple", 3], ["kiwi", 12]], ["fruit", "n"]) == expected
    assert format_table([["apple", 3], ["kiwi", 12]], ["fruit", "n"], align=None) == expected


@pytest.mark.parametrize("align", ["l", "lrcl", "lx", "LR", ""])
def test_bad_align(align):
    with pytest.raises(ValueError):
        format_table([["a", 1]], ["x", "y"], align=align)
