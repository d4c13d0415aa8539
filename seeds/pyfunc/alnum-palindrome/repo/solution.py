def is_palindrome(s):
    """Return True if s is a palindrome considering only letters and digits, ignoring case."""
    raise NotImplementedError
