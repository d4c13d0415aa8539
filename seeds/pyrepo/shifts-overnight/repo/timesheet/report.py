"""Totals over many shifts."""


def total_minutes(shifts):
    """Minutes worked over all shifts."""
    return sum(s.duration_minutes() for s in shifts)


def minutes_by_day(shifts):
    """{date: minutes worked that day}, dates ascending."""
    days = {}
    for shift in shifts:
        days[shift.day] = days.get(shift.day, 0) + shift.duration_minutes()
    return dict(sorted(days.items()))
