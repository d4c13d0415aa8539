"""Integers <-> Roman numerals."""

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
    """The Roman numeral of a positive integer."""
    if n < 1:
        raise ValueError("Roman numerals start at 1")
    out = []
    for value, symbol in VALUES:
        count, n = divmod(n, value)
        out.append(symbol * count)
    return "".join(out)


def from_roman(s):
    """The integer value of a Roman numeral."""
    total = 0
    for i, ch in enumerate(s):
        if ch not in SYMBOLS:
            raise ValueError(f"not a Roman digit: {ch!r}")
        value = SYMBOLS[ch]
        if i + 1 < len(s) and SYMBOLS.get(s[i + 1], 0) > value:
            total -= value
        else:
            total += value
    return total
