import pytest

from memo import LRUCache


def test_evicts_least_recently_used():
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1
    cache.put("c", 3)
    assert cache.keys() == ["a", "c"]
    assert "b" not in cache


def test_stats():
    cache = LRUCache(1)
    cache.put("x", 1)
    cache.get("x")
    cache.get("y", 0)
    assert cache.stats() == {"hits": 1, "misses": 1, "size": 1}


def test_maxsize_positive():
    with pytest.raises(ValueError):
        LRUCache(0)
