"""Amounts of money with exact decimal arithmetic."""

from tally.money import Money, parse_money
from tally.split import split

__all__ = ["Money", "parse_money", "split"]
