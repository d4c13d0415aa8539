def int_to_roman(n):
    """Return the standard Roman numeral for an integer n between 1 and 3999."""
    raise NotImplementedError
