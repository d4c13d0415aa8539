"""The Interval type: [start, end)."""

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Interval:
    """A half-open interval [start, end) with start <= end."""

    start: float
    end: float

    def __post_init__(self):
        if self.start > self.end:
            raise ValueError(f"start {self.start} is after end {self.end}")

    @property
    def length(self):
        return self.end - self.start

    def overlaps(self, other):
        """Whether the two intervals share at least one point."""
        return self.start < other.end and other.start < self.end

    def __contains__(self, x):
        return self.start <= x < self.end
