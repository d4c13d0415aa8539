def word_counts(text):
    """Return a dict mapping each lowercased word of text to how often it occurs."""
    raise NotImplementedError
