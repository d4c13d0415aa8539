import pytest

from throttle import KeyedLimiter, ManualClock, TokenBucket


def test_idle_bucket_is_capped():
    clock = ManualClock()
    bucket = TokenBucket(rate=1, capacity=5, clock=clock)
    clock.advance(1000)
    assert bucket.tokens == 5.0
    assert sum(bucket.try_acquire() for _ in range(20)) == 5


def test_cap_after_partial_use():
    clock = ManualClock()
    bucket = TokenBucket(rate=4, capacity=4, clock=clock)
    assert bucket.try_acquire(3)
    clock.advance(10)
    assert bucket.tokens == 4.0
    assert bucket.try_acquire(4)
    assert not bucket.try_acquire()


def test_wait_time_counts_tokens_present():
    clock = ManualClock()
    bucket = TokenBucket(rate=2, capacity=4, clock=clock)
    assert bucket.try_acquire(3)
    assert bucket.wait_time(1) == 0.0
    assert bucket.wait_time(3) == pytest.approx(1.0)
    clock.advance(0.25)
    assert bucket.wait_time(4) == pytest.approx(1.25)


def test_wait_time_then_acquire():
    clock = ManualClock()
    bucket = TokenBucket(rate=0.5, capacity=2, clock=clock)
    assert bucket.try_acquire(1.5)
    wait = bucket.wait_time(1)
    assert wait == pytest.approx(1.0)
    clock.advance(wait / 2)
    assert not bucket.try_acquire(1)
    clock.advance(wait)
    assert bucket.try_acquire(1)


def test_more_than_capacity_raises():
    bucket = TokenBucket(rate=1, capacity=3, clock=ManualClock())
    with pytest.raises(ValueError):
        bucket.try_acquire(4)
    with pytest.raises(ValueError):
        bucket.wait_time(4)
    assert bucket.try_acquire(3)


def test_keyed_limiter_idle_key_capped():
    clock = ManualClock()
    limiter = KeyedLimiter(rate=1, capacity=2, clock=clock)
    assert limiter.allow("k")
    clock.advance(60)
    assert [limiter.allow("k") for _ in range(4)] == [True, True, False, False]
