def armstrong_in_range(lo, hi):
    """Return the Armstrong numbers n with lo <= n <= hi, ascending."""
    out = []
    for n in range(lo, hi + 1):
        s = str(n)
        if sum(int(c) ** len(s) for c in s) == n:
            out.append(n)
    return out
