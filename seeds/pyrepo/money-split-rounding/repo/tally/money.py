"""The Money value type."""

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


@dataclass(frozen=True)
class Money:
    """An amount in a currency, always rounded to whole cents."""

    amount: Decimal
    currency: str = "EUR"

    def __post_init__(self):
        value = Decimal(str(self.amount)).quantize(CENT, rounding=ROUND_HALF_UP)
        object.__setattr__(self, "amount", value)

    def _check(self, other):
        if not isinstance(other, Money):
            return NotImplemented
        if other.currency != self.currency:
            raise ValueError(f"cannot mix {self.currency} and {other.currency}")
        return None

    def __add__(self, other):
        bad = self._check(other)
        if bad is NotImplemented:
            return bad
        return Money(self.amount + other.amount, self.currency)

    def __sub__(self, other):
        bad = self._check(other)
        if bad is NotImplemented:
            return bad
        return Money(self.amount - other.amount, self.currency)

    def __mul__(self, factor):
        return Money(self.amount * Decimal(str(factor)), self.currency)

    def __str__(self):
        return f"{self.amount} {self.currency}"


def parse_money(text):
    """Parse '12.50 EUR' (or just '12.50') into Money."""
    parts = text.split()
    if len(parts) == 1:
        return Money(Decimal(parts[0]))
    if len(parts) == 2:
        return Money(Decimal(parts[0]), parts[1].upper())
    raise ValueError(f"not an amount: {text!r}")
