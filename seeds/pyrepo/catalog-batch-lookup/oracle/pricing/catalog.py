"""Product lookups through a (slow) backend, each SKU fetched at most once."""

from dataclasses import dataclass
from decimal import Decimal


@dataclass(frozen=True)
class Item:
    """A product."""

    sku: str
    name: str
    price: Decimal


class Catalog:
    """Product data from a backend with `fetch(sku) -> Item` (KeyError if unknown).

    A backend may also offer `fetch_many(skus) -> {sku: Item}` (unknown SKUs left out),
    which `prefetch` uses to load many SKUs in one request.
    """

    def __init__(self, backend):
        self.backend = backend
        self._items = {}

    def item(self, sku):
        """The Item of a SKU (fetched once, then remembered)."""
        if sku not in self._items:
            self._items[sku] = self.backend.fetch(sku)
        return self._items[sku]

    def prefetch(self, skus):
        """Load every SKU not yet remembered, in one fetch_many call when possible."""
        missing = sorted({sku for sku in skus if sku not in self._items})
        if not missing:
            return
        fetch_many = getattr(self.backend, "fetch_many", None)
        if fetch_many is None:
            for sku in missing:
                self.item(sku)
            return
        found = fetch_many(missing)
        for sku in missing:
            if sku in found:
                self._items[sku] = found[sku]

    def price(self, sku):
        """The unit price of a SKU."""
        return self.item(sku).price

    def name(self, sku):
        """The product name of a SKU."""
        return self.item(sku).name
