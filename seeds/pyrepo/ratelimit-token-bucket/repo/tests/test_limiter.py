from throttle import KeyedLimiter, ManualClock


def test_keys_are_independent():
    limiter = KeyedLimiter(rate=1, capacity=1, clock=ManualClock())
    assert limiter.allow("alice")
    assert not limiter.allow("alice")
    assert limiter.allow("bob")
    assert limiter.keys() == ["alice", "bob"]
