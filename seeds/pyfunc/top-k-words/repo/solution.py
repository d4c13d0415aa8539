def top_k_words(text, k):
    """Return the k most frequent lowercased words of text, ties in alphabetical order."""
    raise NotImplementedError
