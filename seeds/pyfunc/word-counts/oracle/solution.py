import re


def word_counts(text):
    """Return a dict mapping each lowercased word of text to how often it occurs."""
    counts = {}
    for word in re.findall(r"[A-Za-z]+", text):
        word = word.lower()
        counts[word] = counts.get(word, 0) + 1
    return counts
