"""An account and its balance, in exact decimal cents."""

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def to_decimal(value):
    """A Decimal from an int, str or Decimal (floats are refused)."""
    if isinstance(value, float):
        raise TypeError("use str or Decimal for money, not float")
    return Decimal(value)


class InsufficientFunds(Exception):
    """A withdrawal larger than the balance."""


class Account:
    """A bank account; `history` lists the entries applied, in order."""

    def __init__(self, name, opening=0):
        self.name = name
        self.balance = to_decimal(opening).quantize(CENT, rounding=ROUND_HALF_UP)
        self.history = []

    def apply(self, entry):
        """Book a deposit or a withdrawal."""
        amount = to_decimal(entry.amount)
        if entry.kind == "deposit":
            self.balance = (self.balance + amount).quantize(CENT)
        elif amount > self.balance:
            raise InsufficientFunds(f"{self.name}: cannot withdraw {amount}")
        else:
            self.balance = (self.balance - amount).quantize(CENT)
        self.history.append(entry)

    def apply_interest(self, rate_percent):
        """Add interest at rate_percent, rounded half-up to cents; return the interest."""
        rate = to_decimal(rate_percent)
        interest = (self.balance * rate / 100).quantize(CENT, rounding=ROUND_HALF_UP)
        self.balance = (self.balance + interest).quantize(CENT)
        return interest
