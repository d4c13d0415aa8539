"""Ledger entries: 'YYYY-MM-DD deposit|withdrawal AMOUNT [memo]'."""

from dataclasses import dataclass
from datetime import date

KINDS = ("deposit", "withdrawal")


@dataclass(frozen=True)
class Entry:
    day: date
    kind: str
    amount: float
    memo: str = ""


def parse_entry(line):
    """Parse one entry line."""
    parts = line.split(maxsplit=3)
    if len(parts) < 3:
        raise ValueError(f"expected 'date kind amount [memo]', got {line!r}")
    day, kind, amount = parts[:3]
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}")
    value = float(amount)
    if value <= 0:
        raise ValueError("amounts must be positive")
    return Entry(date.fromisoformat(day), kind, value, parts[3] if len(parts) > 3 else "")
