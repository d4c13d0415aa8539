"""One field of a cron expression -> the set of values it allows."""


def parse_field(text, lo, hi, names=None):
    """The values lo..hi allowed by a field: '*' or a comma list of numbers.

    `names` (optional) maps upper-case names to numbers for this field.
    """
    if text == "*":
        return set(range(lo, hi + 1))
    values = set()
    for part in text.split(","):
        if not part.isdigit():
            raise ValueError(f"bad cron field item {part!r}")
        n = int(part)
        if not lo <= n <= hi:
            raise ValueError(f"{n} is outside {lo}-{hi}")
        values.add(n)
    return values
