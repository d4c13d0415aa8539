def count_vowels(s):
    """Return how many characters of s are vowels (a, e, i, o, u in either case)."""
    return sum(1 for ch in s if ch in "aeiouAEIOU")
