"""Ledger entries: 'YYYY-MM-DD deposit|withdrawal AMOUNT [memo]'."""

from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation

KINDS = ("deposit", "withdrawal")


@dataclass(frozen=True)
class Entry:
    day: date
    kind: str
    amount: Decimal
    memo: str = ""


def parse_amount(text):
    """A positive Decimal with at most two decimal places."""
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise ValueError(f"not an amount: {text!r}") from None
    if not value.is_finite() or value <= 0:
        raise ValueError("amounts must be positive")
    if value.as_tuple().exponent < -2:
        raise ValueError(f"more than two decimal places: {text!r}")
    return value


def parse_entry(line):
    """Parse one entry line."""
    parts = line.split(maxsplit=3)
    if len(parts) < 3:
        raise ValueError(f"expected 'date kind amount [memo]', got {line!r}")
    day, kind, amount = parts[:3]
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}")
    value = parse_amount(amount)
    return Entry(date.fromisoformat(day), kind, value, parts[3] if len(parts) > 3 else "")
