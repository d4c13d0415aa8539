import pytest

from throttle import ManualClock, TokenBucket


def test_starts_full_and_drains():
    clock = ManualClock()
    bucket = TokenBucket(rate=1, capacity=3, clock=clock)
    assert [bucket.try_acquire() for _ in range(4)] == [True, True, True, False]


def test_refills_with_time():
    clock = ManualClock()
    bucket = TokenBucket(rate=2, capacity=4, clock=clock)
    assert bucket.try_acquire(4)
    clock.advance(0.5)
    assert bucket.tokens == 1.0
    assert bucket.try_acquire()
    assert not bucket.try_acquire()


def test_wait_time_zero_when_available():
    bucket = TokenBucket(rate=1, capacity=2, clock=ManualClock())
    assert bucket.wait_time() == 0.0


def test_invalid_settings():
    with pytest.raises(ValueError):
        TokenBucket(rate=0, capacity=1, clock=ManualClock())


def test_clock_never_goes_back():
    with pytest.raises(ValueError):
        ManualClock().advance(-1)
