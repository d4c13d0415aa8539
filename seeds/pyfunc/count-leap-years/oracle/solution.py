def count_leap_years(start, end):
    """Return how many Gregorian leap years y satisfy start <= y <= end."""
    def upto(y):
        return y // 4 - y // 100 + y // 400

    if start > end:
        return 0
    return upto(end) - upto(start - 1)
