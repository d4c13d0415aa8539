"""Nested data <-> flat dicts with dotted keys."""

from dotted.flatten import flatten
from dotted.paths import get_path

__all__ = ["flatten", "get_path"]
