import re


def top_k_words(text, k):
    """Return the k most frequent lowercased words of text, ties in alphabetical order."""
    counts = {}
    for word in re.findall(r"[A-Za-z]+", text):
        word = word.lower()
        counts[word] = counts.get(word, 0) + 1
    return sorted(counts, key=lambda w: (-counts[w], w))[:k]
