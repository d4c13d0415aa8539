"""An account and its balance."""


class InsufficientFunds(Exception):
    """A withdrawal larger than the balance."""


class Account:
    """A bank account; `history` lists the entries applied, in order."""

    def __init__(self, name, opening=0):
        self.name = name
        self.balance = round(float(opening), 2)
        self.history = []

    def apply(self, entry):
        """Book a deposit or a withdrawal."""
        if entry.kind == "deposit":
            self.balance += entry.amount
        elif entry.amount > self.balance:
            raise InsufficientFunds(f"{self.name}: cannot withdraw {entry.amount}")
        else:
            self.balance -= entry.amount
        self.history.append(entry)

    def apply_interest(self, rate_percent):
        """Add interest at rate_percent, rounded to cents; return the interest."""
        interest = round(self.balance * float(rate_percent) / 100, 2)
        self.balance = round(self.balance + interest, 2)
        return interest
