from datetime import date, datetime

from recur import add_months, monthly_series


def test_clamps_to_month_end():
    assert add_months(date(2024, 1, 31), 1) == date(2024, 2, 29)
    assert add_months(date(2023, 1, 31), 1) == date(2023, 2, 28)
    assert add_months(date(2024, 3, 31), 1) == date(2024, 4, 30)


def test_negative_and_large():
    assert add_months(date(2024, 3, 31), -1) == date(2024, 2, 29)
    assert add_months(date(2024, 5, 31), -15) == date(2023, 2, 28)
    assert add_months(date(2020, 2, 29), 12) == date(2021, 2, 28)
    assert add_months(date(2020, 2, 29), 48) == date(2024, 2, 29)


def test_datetime_kept():
    result = add_months(datetime(2024, 1, 31, 13, 45, 7), 1)
    assert type(result) is datetime
    assert result == datetime(2024, 2, 29, 13, 45, 7)


def test_series_does_not_drift():
    assert monthly_series(date(2024, 1, 31), 5) == [
        date(2024, 1, 31),
        date(2024, 2, 29),
        date(2024, 3, 31),
        date(2024, 4, 30),
        date(2024, 5, 31),
    ]


def test_series_from_the_30th_over_february():
    series = monthly_series(date(2023, 12, 30), 4)
    assert series == [date(2023, 12, 30), date(2024, 1, 30), date(2024, 2, 29), date(2024, 3, 30)]
    assert all(type(d) is date for d in series)
