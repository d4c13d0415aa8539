def lcs_length(a, b):
    """Return the length of the longest common subsequence of the strings a and b."""
    raise NotImplementedError
