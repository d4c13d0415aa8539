"""A token bucket: `rate` tokens per second, at most `capacity` stored."""


class TokenBucket:
    """Allow bursts of up to `capacity` requests and `rate` requests per second."""

    def __init__(self, rate, capacity, clock):
        if rate <= 0 or capacity <= 0:
            raise ValueError("rate and capacity must be positive")
        self.rate = float(rate)
        self.capacity = float(capacity)
        self.clock = clock
        self._tokens = float(capacity)
        self._last = clock()

    def _refill(self):
        now = self.clock()
        self._tokens = min(self.capacity, self._tokens + (now - self._last) * self.rate)
        self._last = now

    def _check(self, n):
        if n > self.capacity:
            raise ValueError(f"{n} tokens can never be available (capacity {self.capacity:g})")

    @property
    def tokens(self):
        """Tokens available now."""
        self._refill()
        return self._tokens

    def try_acquire(self, n=1):
        """Take n tokens if they are available; return whether it worked."""
        self._check(n)
        self._refill()
        if self._tokens >= n:
            self._tokens -= n
            return True
        return False

    def wait_time(self, n=1):
        """Seconds until n tokens are available."""
        self._check(n)
        self._refill()
        if self._tokens >= n:
            return 0.0
        return (n - self._tokens) / self.rate
