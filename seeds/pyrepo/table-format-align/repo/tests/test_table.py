from decimal import Decimal

import pytest

from gridfmt import cell_text, format_table


def test_cell_text():
    assert cell_text(None) == ""
    assert cell_text(1.5) == "1.50"
    assert cell_text(Decimal("3.10")) == "3.10"
    assert cell_text(True) == "True"


def test_left_aligned():
    table = format_table([["apple", 3], ["kiwi", 12]], ["fruit", "n"])
    assert table == "fruit | n \n------+---\napple | 3 \nkiwi  | 12"


def test_bad_row():
    with pytest.raises(ValueError):
        format_table([[1]], ["a", "b"])
