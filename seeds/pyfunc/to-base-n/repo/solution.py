def to_base(n, b):
    """Return n >= 0 written in base b (2..36) with digits 0-9 then lowercase a-z."""
    raise NotImplementedError
