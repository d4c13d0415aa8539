"""One token bucket per key (a user, an IP address, an API token)."""

from throttle.bucket import TokenBucket


class KeyedLimiter:
    """Rate-limit many keys independently with the same settings."""

    def __init__(self, rate, capacity, clock):
        self.rate = rate
        self.capacity = capacity
        self.clock = clock
        self._buckets = {}

    def bucket(self, key):
        """The bucket of a key (created full on first use)."""
        if key not in self._buckets:
            self._buckets[key] = TokenBucket(self.rate, self.capacity, self.clock)
        return self._buckets[key]

    def allow(self, key, n=1):
        """Whether the key may make a request costing n tokens now."""
        return self.bucket(key).try_acquire(n)

    def keys(self):
        """Keys seen so far, sorted."""
        return sorted(self._buckets)
