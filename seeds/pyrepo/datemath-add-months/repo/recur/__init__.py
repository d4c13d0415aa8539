"""Date arithmetic for recurring payments."""

from recur.months import add_months, monthly_series
from recur.weekdays import add_business_days, next_weekday

__all__ = ["add_business_days", "add_months", "monthly_series", "next_weekday"]
