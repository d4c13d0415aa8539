from decimal import Decimal

import pytest

from pricing import Catalog, InvoiceLine, Item, cart_total, invoice

PRICES = {f"S{i:03d}": Decimal(i) / 4 for i in range(60)}
ITEMS = {sku: Item(sku, f"Product {i}", PRICES[sku]) for i, sku in enumerate(PRICES)}


class SlowBackend:
    def __init__(self):
        self.fetch_calls = []

    def fetch(self, sku):
        self.fetch_calls.append(sku)
        return ITEMS[sku]


class BatchBackend(SlowBackend):
    def __init__(self):
        super().__init__()
        self.many_calls = []

    def fetch_many(self, skus):
        self.many_calls.append(list(skus))
        return {s: ITEMS[s] for s in skus if s in ITEMS}


def big_cart():
    return [(f"S{(i * 7) % 50:03d}", 1 + i % 3) for i in range(5000)]


def test_fetch_once_per_sku():
    backend = SlowBackend()
    catalog = Catalog(backend)
    total = cart_total(catalog, big_cart())
    assert sorted(backend.fetch_calls) == sorted(f"S{i:03d}" for i in range(50))
    assert total == sum((PRICES[s] * q for s, q in big_cart()), Decimal(0))
    cart_total(catalog, big_cart())
    assert len(backend.fetch_calls) == 50


def test_prefetch_without_fetch_many_sorted():
    backend = SlowBackend()
    catalog = Catalog(backend)
    catalog.prefetch(["S005", "S001", "S005", "S003"])
    assert backend.fetch_calls == ["S001", "S003", "S005"]
    assert catalog.price("S003") == Decimal("0.75")
    assert backend.fetch_calls == ["S001", "S003", "S005"]


def test_single_batch_call():
    backend = BatchBackend()
    catalog = Catalog(backend)
    lines = invoice(catalog, big_cart())
    assert len(lines) == 5000
    assert backend.many_calls == [[f"S{i:03d}" for i in range(50)]]
    assert backend.fetch_calls == []
    line = lines[1]
    assert isinstance(line, InvoiceLine)
    # plain values, compared here (the project's own __eq__ would decide an == of objects)
    fields = (line.sku, line.name, line.quantity, line.unit_price, line.total)
    assert fields == ("S007", "Product 7", 2, Decimal("1.75"), Decimal("3.50"))


def test_batch_only_missing():
    backend = BatchBackend()
    catalog = Catalog(backend)
    catalog.item("S002")
    catalog.prefetch(["S002", "S009", "S004"])
    catalog.prefetch(["S004", "S002"])
    assert backend.many_calls == [["S004", "S009"]]
    assert backend.fetch_calls == ["S002"]


def test_unknown_sku_not_cached():
    backend = BatchBackend()
    catalog = Catalog(backend)
    with pytest.raises(KeyError):
        invoice(catalog, [("S001", 1), ("NOPE", 1)])
    ITEMS["NOPE"] = Item("NOPE", "Late", Decimal("1"))
    try:
        assert catalog.price("NOPE") == Decimal("1")
    finally:
        del ITEMS["NOPE"]
    assert backend.many_calls == [["NOPE", "S001"]]


def test_failed_fetch_propagates():
    backend = SlowBackend()
    catalog = Catalog(backend)
    with pytest.raises(KeyError):
        catalog.prefetch(["S001", "ZZZ"])
    with pytest.raises(KeyError):
        catalog.item("ZZZ")
    assert backend.fetch_calls == ["S001", "ZZZ", "ZZZ"]
