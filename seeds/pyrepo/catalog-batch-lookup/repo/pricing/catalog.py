"""Product lookups through a (slow) backend."""

from dataclasses import dataclass
from decimal import Decimal


@dataclass(frozen=True)
class Item:
    """A product."""

    sku: str
    name: str
    price: Decimal


class Catalog:
    """Product data from a backend with `fetch(sku) -> Item` (KeyError if unknown)."""

    def __init__(self, backend):
        self.backend = backend

    def item(self, sku):
        """The Item of a SKU."""
        return self.backend.fetch(sku)

    def price(self, sku):
        """The unit price of a SKU."""
        return self.item(sku).price

    def name(self, sku):
        """The product name of a SKU."""
        return self.item(sku).name
