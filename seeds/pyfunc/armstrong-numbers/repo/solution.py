def armstrong_in_range(lo, hi):
    """Return the Armstrong numbers n with lo <= n <= hi, ascending."""
    raise NotImplementedError
