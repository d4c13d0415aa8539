def roman_to_int(s):
    """Return the integer value of a valid Roman numeral (1 to 3999)."""
    raise NotImplementedError
