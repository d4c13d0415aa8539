"""Filters: functions applied to a value with `{{ value | name:arg }}`."""

_MISSING = object()


def _default(value, fallback=""):
    return fallback if value is _MISSING or value is None or value == "" else value


def _truncate(value, n):
    text = str(value)
    return text[:n] + "..." if len(text) > n else text


def _join(value, sep=""):
    return sep.join(str(item) for item in value)


FILTERS = {
    "upper": lambda v: str(v).upper(),
    "lower": lambda v: str(v).lower(),
    "title": lambda v: str(v).title(),
    "strip": lambda v: str(v).strip(),
    "length": len,
    "truncate": _truncate,
    "join": _join,
    "default": _default,
}


def register_filter(name, func):
    """Make a filter available to every later render."""
    FILTERS[name] = func
