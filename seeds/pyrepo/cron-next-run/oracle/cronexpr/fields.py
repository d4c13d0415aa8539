"""One field of a cron expression -> the set of values it allows."""

import re

ITEM = re.compile(r"^(\*|\w+)(?:-(\w+))?(?:/(\d+))?$")


def _value(token, lo, hi, names):
    if token.isdigit():
        n = int(token)
    elif names and token.upper() in names:
        n = names[token.upper()]
    else:
        raise ValueError(f"bad cron value {token!r}")
    if not lo <= n <= hi:
        raise ValueError(f"{n} is outside {lo}-{hi}")
    return n


def parse_field(text, lo, hi, names=None):
    """The values lo..hi allowed by a field.

    Items (comma-separated): '*', 'a', 'a-b', each optionally with '/step'; 'a/step'
    runs from a to hi. `names` (optional) maps upper-case names to numbers.
    """
    values = set()
    for part in text.split(","):
        match = ITEM.match(part)
        if not match:
            raise ValueError(f"bad cron field item {part!r}")
        start, end, step = match.groups()
        if start == "*":
            if end is not None:
                raise ValueError(f"bad cron field item {part!r}")
            first, last = lo, hi
        else:
            first = _value(start, lo, hi, names)
            if end is not None:
                last = _value(end, lo, hi, names)
            else:
                last = hi if step is not None else first
        if first > last:
            raise ValueError(f"range {part!r} runs backwards")
        stride = int(step) if step is not None else 1
        if stride < 1:
            raise ValueError(f"step must be at least 1 in {part!r}")
        values.update(range(first, last + 1, stride))
    return values
