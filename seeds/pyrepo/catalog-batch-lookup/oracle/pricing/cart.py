"""Invoices and totals for carts given as (sku, quantity) lines."""

from dataclasses import dataclass
from decimal import Decimal


@dataclass(frozen=True)
class InvoiceLine:
    """One priced cart line."""

    sku: str
    name: str
    quantity: int
    unit_price: Decimal
    total: Decimal


def invoice(catalog, lines):
    """Price each (sku, quantity) line of a cart, in order."""
    lines = list(lines)
    catalog.prefetch([sku for sku, _ in lines])
    out = []
    for sku, quantity in lines:
        if quantity < 1:
            raise ValueError(f"quantity of {sku} must be at least 1")
        item = catalog.item(sku)
        out.append(
            InvoiceLine(
                sku=sku,
                name=item.name,
                quantity=quantity,
                unit_price=item.price,
                total=item.price * quantity,
            )
        )
    return out


def cart_total(catalog, lines):
    """The sum of a cart's line totals."""
    return sum((line.total for line in invoice(catalog, lines)), Decimal("0"))
