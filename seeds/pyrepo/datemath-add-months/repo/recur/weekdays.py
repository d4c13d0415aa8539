"""Weekdays and business days (Monday to Friday)."""

from datetime import timedelta

MONDAY, TUESDAY, WEDNESDAY, THURSDAY, FRIDAY, SATURDAY, SUNDAY = range(7)


def next_weekday(d, weekday):
    """The first date after d that falls on weekday (0 = Monday)."""
    ahead = (weekday - d.weekday()) % 7 or 7
    return d + timedelta(days=ahead)


def add_business_days(d, n):
    """Move n business days forward (n >= 0), skipping Saturdays and Sundays."""
    if n < 0:
        raise ValueError("n must not be negative")
    while n:
        d += timedelta(days=1)
        if d.weekday() < SATURDAY:
            n -= 1
    return d
