"""Totals over many shifts."""

from datetime import timedelta


def total_minutes(shifts):
    """Minutes worked over all shifts."""
    return sum(s.duration_minutes() for s in shifts)


def minutes_by_day(shifts):
    """{date: minutes worked that day}, dates ascending, no zero days.

    Night shifts are split at midnight; the break comes off the start day first.
    """
    days = {}
    for shift in shifts:
        first = shift.minutes_on_start_day()
        second = shift.span_minutes() - first
        from_first = min(shift.break_minutes, first)
        first -= from_first
        second -= shift.break_minutes - from_first
        next_day = shift.day + timedelta(days=1)
        for day, minutes in ((shift.day, first), (next_day, second)):
            if minutes:
                days[day] = days.get(day, 0) + minutes
    return {day: minutes for day, minutes in sorted(days.items()) if minutes}
