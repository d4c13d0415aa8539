"""Clocks: callables returning seconds as a float."""

import time


class MonotonicClock:
    """The real monotonic clock."""

    def __call__(self):
        return time.monotonic()


class ManualClock:
    """A clock that only moves when told to (for tests and simulations)."""

    def __init__(self, start=0.0):
        self.now = float(start)

    def __call__(self):
        return self.now

    def advance(self, seconds):
        if seconds < 0:
            raise ValueError("time does not run backwards")
        self.now += seconds
