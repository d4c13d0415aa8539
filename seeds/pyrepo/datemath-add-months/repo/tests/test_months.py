from datetime import date

from recur import add_months, monthly_series


def test_simple():
    assert add_months(date(2024, 3, 15), 1) == date(2024, 4, 15)


def test_year_wrap():
    assert add_months(date(2023, 11, 5), 3) == date(2024, 2, 5)
    assert add_months(date(2024, 1, 5), -1) == date(2023, 12, 5)


def test_series_mid_month():
    assert monthly_series(date(2024, 11, 10), 3) == [
        date(2024, 11, 10),
        date(2024, 12, 10),
        date(2025, 1, 10),
    ]
