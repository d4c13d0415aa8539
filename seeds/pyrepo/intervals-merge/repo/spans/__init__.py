"""Half-open numeric intervals and their unions."""

from spans.interval import Interval
from spans.merge import gaps, merge, total_length

__all__ = ["Interval", "gaps", "merge", "total_length"]
