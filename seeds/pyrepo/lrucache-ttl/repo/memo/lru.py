"""A least-recently-used cache."""

from collections import OrderedDict

_MISSING = object()


class LRUCache:
    """Keep at most `maxsize` entries, evicting the least recently used first."""

    def __init__(self, maxsize):
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self.maxsize = maxsize
        self._data = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key, default=None):
        """The value of key (marking it most recently used), or default."""
        value = self._data.get(key, _MISSING)
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
        while len(self._data) > self.maxsize:
            self._data.popitem(last=False)

    def __contains__(self, key):
        return key in self._data

    def __len__(self):
        return len(self._data)

    def keys(self):
        """Keys from least to most recently used."""
        return list(self._data)

    def stats(self):
        """Hit and miss counts."""
        return {"hits": self.hits, "misses": self.misses, "size": len(self)}

    def clear(self):
        """Drop every entry (statistics are kept)."""
        self._data.clear()
