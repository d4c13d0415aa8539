def to_base(n, b):
    """Return n >= 0 written in base b (2..36) with digits 0-9 then lowercase a-z."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    if n == 0:
        return "0"
    out = []
    while n:
        n, r = divmod(n, b)
        out.append(digits[r])
    return "".join(reversed(out))
