"""Cron expressions and their next run times."""

from cronexpr.fields import parse_field
from cronexpr.schedule import Cron

__all__ = ["Cron", "parse_field"]
