from decimal import Decimal

import pytest

from tally import Money, parse_money


def test_rounds_to_cents():
    assert Money("1.005").amount == Decimal("1.01")


def test_add_and_sub():
    assert Money("1.50") + Money("2.25") == Money("3.75")
    assert Money("1.50") - Money("2.25") == Money("-0.75")


def test_mixed_currencies_rejected():
    with pytest.raises(ValueError):
        Money("1", "EUR") + Money("1", "USD")


def test_parse():
    assert parse_money("12.5 usd") == Money("12.50", "USD")
    assert str(parse_money("3")) == "3.00 EUR"
