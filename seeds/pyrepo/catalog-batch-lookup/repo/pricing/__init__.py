"""Pricing shopping carts from a product catalog."""

from pricing.cart import InvoiceLine, cart_total, invoice
from pricing.catalog import Catalog, Item

__all__ = ["Catalog", "InvoiceLine", "Item", "cart_total", "invoice"]
