"""Work shifts and their hours."""

from timesheet.clock import format_minutes, parse_hhmm
from timesheet.report import minutes_by_day, total_minutes
from timesheet.shifts import Shift

__all__ = ["Shift", "format_minutes", "minutes_by_day", "parse_hhmm", "total_minutes"]
