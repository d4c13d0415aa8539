"""A work shift."""

from dataclasses import dataclass
from datetime import date

from timesheet.clock import parse_hhmm


@dataclass(frozen=True)
class Shift:
    """A shift starting on `day` from `start` to `end` ('HH:MM'), with a break."""

    day: date
    start: str
    end: str
    break_minutes: int = 0

    def __post_init__(self):
        parse_hhmm(self.start)
        parse_hhmm(self.end)

    def span_minutes(self):
        """Minutes from start to end, break included."""
        return parse_hhmm(self.end) - parse_hhmm(self.start)

    def duration_minutes(self):
        """Minutes worked: the span minus the break."""
        return self.span_minutes() - self.break_minutes
