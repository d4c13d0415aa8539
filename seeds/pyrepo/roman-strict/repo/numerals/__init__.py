"""Roman numerals."""

from numerals.convert import parse_number
from numerals.roman import from_roman, to_roman

__all__ = ["from_roman", "parse_number", "to_roman"]
