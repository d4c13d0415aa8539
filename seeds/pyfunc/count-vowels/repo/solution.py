def count_vowels(s):
    """Return how many characters of s are vowels (a, e, i, o, u in either case)."""
    raise NotImplementedError
