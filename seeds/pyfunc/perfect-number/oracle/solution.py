def is_perfect(n):
    """Return True if the positive integer n equals the sum of its proper divisors."""
    if n < 2:
        return False
    total = 1
    d = 2
    while d * d <= n:
        if n % d == 0:
            total += d
            if d != n // d:
                total += n // d
        d += 1
    return total == n
