"""A to-do list kept in a JSON file."""

from todocli.store import Item, load_items, save_items

__all__ = ["Item", "load_items", "save_items"]
