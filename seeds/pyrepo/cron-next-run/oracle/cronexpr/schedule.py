"""Cron schedules: which minutes match, and the next run after a time."""

from datetime import datetime, timedelta

from cronexpr.fields import parse_field

MONTHS = {name: i for i, name in enumerate(
    ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"], 1)}
WEEKDAYS = {name: i for i, name in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"])}
SEARCH_DAYS = 5 * 366


class Cron:
    """A 5-field cron expression: minute hour day-of-month month day-of-week (0 = Sunday)."""

    def __init__(self, expr):
        parts = expr.split()
        if len(parts) != 5:
            raise ValueError(f"a cron expression has 5 fields, got {len(parts)}")
        self.expr = expr
        self.minutes = parse_field(parts[0], 0, 59)
        self.hours = parse_field(parts[1], 0, 23)
        self.days = parse_field(parts[2], 1, 31)
        self.months = parse_field(parts[3], 1, 12, MONTHS)
        weekdays = parse_field(parts[4], 0, 7, WEEKDAYS)
        self.weekdays = {d % 7 for d in weekdays}
        self.day_restricted = not parts[2].startswith("*")
        self.weekday_restricted = not parts[4].startswith("*")

    def day_matches(self, d):
        """Whether the date d is a day this schedule runs on."""
        if d.month not in self.months:
            return False
        dom = d.day in self.days
        dow = (d.weekday() + 1) % 7 in self.weekdays
        if self.day_restricted and self.weekday_restricted:
            return dom or dow
        return dom and dow

    def matches(self, dt):
        """Whether the minute of dt is a run."""
        return dt.minute in self.minutes and dt.hour in self.hours and self.day_matches(dt)

    def next_after(self, dt):
        """The first run strictly after dt (searching up to 5 years ahead)."""
        start = dt.replace(second=0, microsecond=0) + timedelta(minutes=1)
        hours, minutes = sorted(self.hours), sorted(self.minutes)
        day = start.date()
        for offset in range(SEARCH_DAYS + 1):
            if offset:
                day += timedelta(days=1)
            if not self.day_matches(day):
                continue
            for hour in hours:
                for minute in minutes:
                    candidate = datetime.combine(day, datetime.min.time()).replace(
                        hour=hour, minute=minute, tzinfo=dt.tzinfo
                    )
                    if candidate >= start:
                        return candidate
        raise ValueError(f"{self.expr!r} does not run within 5 years")
