def to_binary(n):
    """Return the binary representation of the integer n, without a prefix ('-' for negatives)."""
    if n == 0:
        return "0"
    sign = "-" if n < 0 else ""
    n = abs(n)
    digits = []
    while n:
        digits.append(str(n & 1))
        n >>= 1
    return sign + "".join(reversed(digits))
