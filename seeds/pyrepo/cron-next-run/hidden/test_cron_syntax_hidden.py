from datetime import datetime

import pytest

from cronexpr import Cron, parse_field


def test_ranges_and_steps():
    assert parse_field("*/15", 0, 59) == {0, 15, 30, 45}
    assert parse_field("10-30/10", 0, 59) == {10, 20, 30}
    assert parse_field("1-3,7", 0, 10) == {1, 2, 3, 7}
    assert parse_field("50/4", 0, 59) == {50, 54, 58}
    assert parse_field("5-5", 0, 9) == {5}


@pytest.mark.parametrize("text", ["5-1", "*/0", "1-", "-3", "*/", "a", "1,,2", "*-3", "0-60", ""])
def test_malformed(text):
    with pytest.raises(ValueError):
        parse_field(text, 0, 59)


def test_names():
    cron = Cron("0 9 * jan-Mar MON-fri")
    assert cron.months == {1, 2, 3}
    assert cron.weekdays == {1, 2, 3, 4, 5}
    with pytest.raises(ValueError):
        Cron("MON * * * *")
    with pytest.raises(ValueError):
        Cron("0 0 * * JAN")


def test_sunday_as_seven():
    assert Cron("0 0 * * 7").weekdays == {0}
    assert Cron("0 0 * * 5-7").weekdays == {5, 6, 0}
    assert Cron("0 0 * * 7").next_after(datetime(2024, 5, 8)) == datetime(2024, 5, 12)


def test_business_hours():
    cron = Cron("*/15 9-17 * * MON-FRI")
    assert cron.next_after(datetime(2024, 5, 10, 17, 50)) == datetime(2024, 5, 13, 9, 0)
    assert cron.next_after(datetime(2024, 5, 13, 9, 0)) == datetime(2024, 5, 13, 9, 15)
    assert cron.next_after(datetime(2024, 5, 13, 9, 14, 59)) == datetime(2024, 5, 13, 9, 15)


def test_leap_day_years_ahead():
    assert Cron("0 0 29 2 *").next_after(datetime(2025, 3, 1)) == datetime(2028, 2, 29, 0, 0)
    assert Cron("30 4 29 FEB *").next_after(datetime(2024, 2, 29, 4, 30)) == datetime(
        2028, 2, 29, 4, 30
    )


def test_never_runs():
    with pytest.raises(ValueError):
        Cron("0 0 30 2 *").next_after(datetime(2024, 1, 1))
    with pytest.raises(ValueError):
        Cron("0 0 31 APR,JUN,SEP,NOV *").next_after(datetime(2024, 1, 1))


def test_star_step_is_not_restricted():
    cron = Cron("0 0 */10 * MON")
    # */10 starts with '*': both day fields must match (days 1, 11, 21, 31 that are Mondays)
    assert cron.next_after(datetime(2024, 1, 1, 0, 0)) == datetime(2024, 3, 11, 0, 0)
    both = Cron("0 0 1-31/10 * MON")
    assert both.next_after(datetime(2024, 1, 1, 0, 0)) == datetime(2024, 1, 8, 0, 0)


def test_month_end_steps():
    cron = Cron("0 6 28-31 * *")
    runs, t = [], datetime(2024, 1, 27)
    for _ in range(6):
        t = cron.next_after(t)
        runs.append(t)
    assert [(r.month, r.day) for r in runs] == [
        (1, 28), (1, 29), (1, 30), (1, 31), (2, 28), (2, 29),
    ]
