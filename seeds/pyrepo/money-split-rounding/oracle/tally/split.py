"""Splitting an amount into equal shares."""

from tally.money import CENT, Money


def split(money, parts):
    """Split money into `parts` shares that add up exactly to the original amount.

    Shares differ by at most one cent; the larger ones (in absolute value) come first.
    """
    if parts < 1:
        raise ValueError("parts must be at least 1")
    cents = int(money.amount / CENT)
    sign = -1 if cents < 0 else 1
    base, extra = divmod(abs(cents), parts)
    shares = []
    for i in range(parts):
        n = base + (1 if i < extra else 0)
        shares.append(Money(sign * n * CENT, money.currency))
    return shares
