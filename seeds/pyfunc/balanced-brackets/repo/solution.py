def is_balanced(s):
    """Return True if the brackets (), [] and {} in s are balanced and properly nested."""
    raise NotImplementedError
