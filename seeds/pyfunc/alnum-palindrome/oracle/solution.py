def is_palindrome(s):
    """Return True if s is a palindrome considering only letters and digits, ignoring case."""
    kept = [ch.lower() for ch in s if ch.isalnum()]
    return kept == kept[::-1]
