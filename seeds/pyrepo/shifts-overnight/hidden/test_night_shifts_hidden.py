from datetime import date

import pytest

from timesheet import Shift, minutes_by_day, total_minutes

MON, TUE, WED = date(2024, 3, 4), date(2024, 3, 5), date(2024, 3, 6)


def test_overnight_duration():
    assert Shift(MON, "22:00", "06:00").duration_minutes() == 480
    assert Shift(MON, "23:30", "00:15", 15).duration_minutes() == 30
    assert Shift(MON, "00:00", "23:59").duration_minutes() == 1439


def test_invalid_shifts():
    with pytest.raises(ValueError):
        Shift(MON, "08:00", "08:00")
    with pytest.raises(ValueError):
        Shift(MON, "22:00", "06:00", 480)
    with pytest.raises(ValueError):
        Shift(MON, "09:00", "10:00", -5)


def test_split_at_midnight():
    assert minutes_by_day([Shift(MON, "22:00", "06:00", 30)]) == {MON: 90, TUE: 360}


def test_break_larger_than_start_day_share():
    assert minutes_by_day([Shift(MON, "23:30", "07:30", 45)]) == {TUE: 435}
    assert minutes_by_day([Shift(MON, "23:00", "01:00", 60)]) == {TUE: 60}


def test_mixed_week():
    shifts = [
        Shift(TUE, "22:00", "02:00"),
        Shift(MON, "09:00", "17:00", 60),
        Shift(WED, "08:00", "12:00"),
        Shift(MON, "20:00", "00:00"),
    ]
    by_day = minutes_by_day(shifts)
    assert by_day == {MON: 660, TUE: 120, WED: 360}
    assert list(by_day) == [MON, TUE, WED]
    assert total_minutes(shifts) == sum(by_day.values()) == 1140


def test_shift_ending_at_midnight():
    assert minutes_by_day([Shift(MON, "18:00", "00:00")]) == {MON: 360}
