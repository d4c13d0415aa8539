"""Reading numbers written either way."""

from numerals.roman import from_roman


def parse_number(text):
    """An int from '42' or 'XLII' (surrounding whitespace is ignored)."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    return from_roman(text)
