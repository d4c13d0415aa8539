"""Token-bucket rate limiting with an injectable clock."""

from throttle.bucket import TokenBucket
from throttle.clock import ManualClock, MonotonicClock
from throttle.limiter import KeyedLimiter

__all__ = ["KeyedLimiter", "ManualClock", "MonotonicClock", "TokenBucket"]
