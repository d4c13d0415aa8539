"""Turning cell values into text."""

from decimal import Decimal


def cell_text(value):
    """The text of a cell: '' for None, 2 decimals for floats, str() otherwise."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)
