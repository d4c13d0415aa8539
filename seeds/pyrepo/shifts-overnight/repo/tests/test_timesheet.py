from datetime import date

import pytest

from timesheet import Shift, format_minutes, minutes_by_day, parse_hhmm, total_minutes


def test_clock():
    assert parse_hhmm("09:30") == 570
    assert format_minutes(485) == "8:05"
    for bad in ("24:00", "9:30", "12:60"):
        with pytest.raises(ValueError):
            parse_hhmm(bad)


def test_day_shift():
    shift = Shift(date(2024, 3, 4), "09:00", "17:30", 30)
    assert shift.duration_minutes() == 480


def test_totals_day_shifts():
    shifts = [
        Shift(date(2024, 3, 5), "08:00", "12:00"),
        Shift(date(2024, 3, 4), "09:00", "17:00", 60),
        Shift(date(2024, 3, 5), "13:00", "15:00"),
    ]
    assert total_minutes(shifts) == 780
    assert minutes_by_day(shifts) == {date(2024, 3, 4): 420, date(2024, 3, 5): 360}
