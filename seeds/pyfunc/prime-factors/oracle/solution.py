def prime_factors(n):
    """Return the prime factors of n >= 2 in ascending order, with multiplicity."""
    out = []
    f = 2
    while f * f <= n:
        while n % f == 0:
            out.append(f)
            n //= f
        f += 1
    if n > 1:
        out.append(n)
    return out
