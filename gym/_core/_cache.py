"""A small thread-safe LRU cache for values graders compute once per process."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

__all__ = ["LRUCache"]


class LRUCache:
    """The ``size`` most recently used values by key (for example gold states per task).

    Only successful results should be put: a failure is tried again next time.
    """

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self.items: OrderedDict[Hashable, Any] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        """The value under ``key`` (now the most recent), or None."""
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
            return self.items.get(key)

    def put(self, key: Hashable, value: Any) -> None:
        """Keep ``value`` under ``key``, dropping the least recently used beyond ``size``."""
        with self.lock:
            self.items[key] = value
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)
