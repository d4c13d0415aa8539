from datetime import date

import pytest

from recur import add_business_days, next_weekday
from recur.weekdays import FRIDAY, MONDAY


def test_next_weekday():
    assert next_weekday(date(2024, 5, 10), MONDAY) == date(2024, 5, 13)
    assert next_weekday(date(2024, 5, 10), FRIDAY) == date(2024, 5, 17)


def test_business_days():
    assert add_business_days(date(2024, 5, 10), 1) == date(2024, 5, 13)
    assert add_business_days(date(2024, 5, 10), 0) == date(2024, 5, 10)
    with pytest.raises(ValueError):
        add_business_days(date(2024, 5, 10), -1)
