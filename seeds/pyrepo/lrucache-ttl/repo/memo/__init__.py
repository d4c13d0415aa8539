"""A least-recently-used cache and a memoizing decorator."""

from memo.decorator import cached
from memo.lru import LRUCache

__all__ = ["LRUCache", "cached"]
