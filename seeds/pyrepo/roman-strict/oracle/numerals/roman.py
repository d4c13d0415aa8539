"""Integers <-> Roman numerals (canonical forms of 1..3999 only)."""

VALUES = [
    (1000, "M"),
    (900, "CM"),
    (500, "D"),
    (400, "CD"),
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
]
SYMBOLS = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def to_roman(n):
    """The canonical Roman numeral of an int from 1 to 3999."""
    if type(n) is not int:
        raise ValueError(f"not an int: {n!r}")
    if not 1 <= n <= 3999:
        raise ValueError("Roman numerals cover 1 to 3999")
    out = []
    for value, symbol in VALUES:
        count, n = divmod(n, value)
        out.append(symbol * count)
    return "".join(out)


def from_roman(s):
    """The value of a canonical Roman numeral (as to_roman writes it)."""
    if not isinstance(s, str) or not s:
        raise ValueError(f"not a Roman numeral: {s!r}")
    total = 0
    for i, ch in enumerate(s):
        if ch not in SYMBOLS:
            raise ValueError(f"not a Roman digit: {ch!r}")
        value = SYMBOLS[ch]
        if i + 1 < len(s) and SYMBOLS.get(s[i + 1], 0) > value:
            total -= value
        else:
            total += value
    if not 1 <= total <= 3999 or to_roman(total) != s:
        raise ValueError(f"not a canonical Roman numeral: {s!r}")
    return total
