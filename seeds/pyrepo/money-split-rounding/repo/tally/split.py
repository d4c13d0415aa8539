"""Splitting an amount into equal shares."""

from tally.money import Money


def split(money, parts):
    """Split money into `parts` shares that add up to the original amount."""
    if parts < 1:
        raise ValueError("parts must be at least 1")
    share = money.amount / parts
    return [Money(share, money.currency) for _ in range(parts)]
