def lcm_upto(n):
    """Return the least common multiple of 1, 2, ..., n (1 for n = 0)."""
    out = 1
    for k in range(2, n + 1):
        a, b = out, k
        while b:
            a, b = b, a % b
        out = out // a * k
    return out
