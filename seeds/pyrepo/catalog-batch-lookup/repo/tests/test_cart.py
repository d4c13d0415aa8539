from decimal import Decimal

import pytest

from pricing import Catalog, InvoiceLine, Item, cart_total, invoice


class Backend:
    def __init__(self):
        self.items = {
            "A1": Item("A1", "Apple", Decimal("0.40")),
            "B2": Item("B2", "Bread", Decimal("2.15")),
        }

    def fetch(self, sku):
        return self.items[sku]


def test_invoice():
    lines = invoice(Catalog(Backend()), [("B2", 2), ("A1", 3)])
    assert lines == [
        InvoiceLine("B2", "Bread", 2, Decimal("2.15"), Decimal("4.30")),
        InvoiceLine("A1", "Apple", 3, Decimal("0.40"), Decimal("1.20")),
    ]


def test_total():
    assert cart_total(Catalog(Backend()), [("A1", 1), ("A1", 2)]) == Decimal("1.20")
    assert cart_total(Catalog(Backend()), []) == Decimal("0")


def test_errors():
    with pytest.raises(KeyError):
        invoice(Catalog(Backend()), [("ZZ", 1)])
    with pytest.raises(ValueError):
        invoice(Catalog(Backend()), [("A1", 0)])
