"""Adding calendar months."""


def add_months(d, n):
    """The same day n months later (n may be negative)."""
    index = d.year * 12 + (d.month - 1) + n
    year, month = divmod(index, 12)
    return d.replace(year=year, month=month + 1)


def monthly_series(start, count):
    """`count` dates one month apart, starting with start."""
    dates = []
    current = start
    for _ in range(count):
        dates.append(current)
        current = add_months(current, 1)
    return dates
