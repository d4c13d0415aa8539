def digital_root(n):
    """Repeatedly sum the decimal digits of n >= 0 until one digit is left; return it."""
    while n >= 10:
        n = sum(int(c) for c in str(n))
    return n
