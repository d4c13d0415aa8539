from datetime import datetime

import pytest

from cronexpr import Cron


def test_every_minute():
    assert Cron("* * * * *").next_after(datetime(2024, 1, 1, 10, 0, 30)) == datetime(
        2024, 1, 1, 10, 1
    )


def test_daily():
    cron = Cron("30 6 * * *")
    assert cron.next_after(datetime(2024, 1, 1, 6, 30)) == datetime(2024, 1, 2, 6, 30)
    assert cron.next_after(datetime(2024, 12, 31, 23, 59)) == datetime(2025, 1, 1, 6, 30)


def test_day_of_month_or_weekday():
    cron = Cron("0 12 1 * 1")
    assert cron.next_after(datetime(2024, 5, 1, 12, 0)) == datetime(2024, 5, 6, 12, 0)


def test_field_count():
    with pytest.raises(ValueError):
        Cron("* * * *")
