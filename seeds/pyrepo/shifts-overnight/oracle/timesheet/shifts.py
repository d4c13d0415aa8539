"""A work shift."""

from dataclasses import dataclass
from datetime import date

from timesheet.clock import parse_hhmm

DAY = 24 * 60


@dataclass(frozen=True)
class Shift:
    """A shift starting on `day` from `start` to `end` ('HH:MM'), with a break.

    An end earlier than the start means the shift ends on the next day.
    """

    day: date
    start: str
    end: str
    break_minutes: int = 0

    def __post_init__(self):
        start, end = parse_hhmm(self.start), parse_hhmm(self.end)
        if start == end:
            raise ValueError("a shift cannot end when it starts")
        if self.break_minutes < 0 or self.break_minutes >= self.span_minutes():
            raise ValueError(f"break of {self.break_minutes} minutes does not fit the shift")

    def span_minutes(self):
        """Minutes from start to end, break included."""
        return (parse_hhmm(self.end) - parse_hhmm(self.start)) % DAY

    def duration_minutes(self):
        """Minutes worked: the span minus the break."""
        return self.span_minutes() - self.break_minutes

    def minutes_on_start_day(self):
        """Minutes of the span (break included) before midnight."""
        return min(self.span_minutes(), DAY - parse_hhmm(self.start))
