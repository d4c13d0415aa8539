def count_leap_years(start, end):
    """Return how many Gregorian leap years y satisfy start <= y <= end."""
    raise NotImplementedError
