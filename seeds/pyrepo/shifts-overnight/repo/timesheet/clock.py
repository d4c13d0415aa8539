"""Times of day as minutes since midnight."""

import re

HHMM = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")


def parse_hhmm(text):
    """Minutes since midnight of 'HH:MM' (00:00 to 23:59)."""
    match = HHMM.match(text)
    if not match:
        raise ValueError(f"not a time of day: {text!r}")
    return int(match.group(1)) * 60 + int(match.group(2))


def format_minutes(minutes):
    """'H:MM' for a number of minutes (e.g. 485 -> '8:05')."""
    sign = "-" if minutes < 0 else ""
    hours, rest = divmod(abs(minutes), 60)
    return f"{sign}{hours}:{rest:02d}"
