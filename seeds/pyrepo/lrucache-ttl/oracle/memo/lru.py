"""A least-recently-used cache with optional time-to-live expiry."""

import time
from collections import OrderedDict

_MISSING = object()


class LRUCache:
    """Keep at most `maxsize` entries, evicting the least recently used first.

    With a `ttl` (seconds), an entry expires once `clock() - put time >= ttl`.
    """

    def __init__(self, maxsize, ttl=None, clock=time.monotonic):
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self.maxsize = maxsize
        self.ttl = ttl
        self.clock = clock
        self._data = OrderedDict()
        self._stamps = {}
        self.hits = 0
        self.misses = 0

    def _expired(self, key, now):
        return self.ttl is not None and now - self._stamps[key] >= self.ttl

    def _drop(self, key):
        del self._data[key]
        del self._stamps[key]

    def get(self, key, default=None):
        """The value of key (marking it most recently used), or default."""
        value = self._data.get(key, _MISSING)
        if value is not _MISSING and self._expired(key, self.clock()):
            self._drop(key)
            value = _MISSING
        if value is _MISSING:
            self.misses += 1
            return default
        self._data.move_to_end(key)
        self.hits += 1
        return value

    def put(self, key, value):
        """Store a value, evicting the least recently used entry when full."""
        if key in self._data:
            self._data.move_to_end(key)
        self._data[key] = value
        self._stamps[key] = self.clock()
        while len(self._data) > self.maxsize:
            old, _ = self._data.popitem(last=False)
            del self._stamps[old]

    def purge_expired(self):
        """Remove every expired entry; return how many were removed."""
        if self.ttl is None:
            return 0
        now = self.clock()
        dead = [k for k in self._data if self._expired(k, now)]
        for key in dead:
            self._drop(key)
        return len(dead)

    def __contains__(self, key):
        return key in self._data and not self._expired(key, self.clock())

    def __len__(self):
        return len(self.keys())

    def keys(self):
        """Live keys from least to most recently used."""
        now = self.clock()
        return [k for k in self._data if not self._expired(k, now)]

    def stats(self):
        """Hit and miss counts."""
        return {"hits": self.hits, "misses": self.misses, "size": len(self)}

    def clear(self):
        """Drop every entry (statistics are kept)."""
        self._data.clear()
        self._stamps.clear()
