"""Adding calendar months."""

import calendar


def add_months(d, n):
    """The same day n months later (n may be negative), clamped to the month's end."""
    index = d.year * 12 + (d.month - 1) + n
    year, month0 = divmod(index, 12)
    month = month0 + 1
    day = min(d.day, calendar.monthrange(year, month)[1])
    return d.replace(year=year, month=month, day=day)


def monthly_series(start, count):
    """`count` dates one month apart, starting with start (each from start, no drift)."""
    return [add_months(start, k) for k in range(count)]
