"""Memoize a function's results in an LRUCache."""

import functools
import time

from memo.lru import LRUCache

_MISSING = object()


def cached(maxsize=128, ttl=None, clock=time.monotonic):
    """Decorate a function so that results for the same arguments are reused."""

    def wrap(func):
        cache = LRUCache(maxsize, ttl=ttl, clock=clock)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            key = (args, tuple(sorted(kwargs.items())))
            value = cache.get(key, _MISSING)
            if value is _MISSING:
                value = func(*args, **kwargs)
                cache.put(key, value)
            return value

        wrapper.cache = cache
        return wrapper

    return wrap
