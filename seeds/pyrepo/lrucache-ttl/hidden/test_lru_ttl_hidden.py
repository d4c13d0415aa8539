from memo import LRUCache, cached


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_entry_expires_at_ttl():
    clock = FakeClock()
    cache = LRUCache(4, ttl=10, clock=clock)
    cache.put("a", 1)
    clock.now += 9.5
    assert cache.get("a") == 1
    clock.now += 0.5
    assert cache.get("a", "gone") == "gone"
    assert cache.stats() == {"hits": 1, "misses": 1, "size": 0}


def test_expired_entries_invisible():
    clock = FakeClock()
    cache = LRUCache(4, ttl=5, clock=clock)
    cache.put("old", 1)
    clock.now += 3
    cache.put("new", 2)
    clock.now += 2
    assert "old" not in cache
    assert "new" in cache
    assert len(cache) == 1
    assert cache.keys() == ["new"]


def test_put_resets_age_get_does_not():
    clock = FakeClock()
    cache = LRUCache(4, ttl=5, clock=clock)
    cache.put("a", 1)
    cache.put("b", 1)
    clock.now += 4
    cache.put("a", 2)
    assert cache.get("b") == 1
    clock.now += 1
    assert cache.get("a") == 2
    assert cache.get("b") is None


def test_purge_expired():
    clock = FakeClock()
    cache = LRUCache(10, ttl=1, clock=clock)
    for i in range(5):
        cache.put(i, i)
        clock.now += 0.25
    assert cache.purge_expired() == 2
    assert cache.keys() == [2, 3, 4]
    clock.now += 10
    assert cache.purge_expired() == 3
    assert cache.purge_expired() == 0


def test_no_ttl_never_expires():
    clock = FakeClock()
    cache = LRUCache(2, clock=clock)
    cache.put("a", 1)
    clock.now += 1e9
    assert cache.get("a") == 1
    assert cache.purge_expired() == 0


def test_decorator_recomputes_after_ttl():
    clock = FakeClock()
    calls = []

    @cached(maxsize=8, ttl=60, clock=clock)
    def rate(currency):
        calls.append(currency)
        return len(calls)

    assert rate("EUR") == 1
    clock.now += 59
    assert rate("EUR") == 1
    clock.now += 1
    assert rate("EUR") == 2
    assert calls == ["EUR", "EUR"]
