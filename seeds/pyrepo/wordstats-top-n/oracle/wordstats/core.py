"""Counting words."""

import re
from collections import Counter

WORD = re.compile(r"[A-Za-z']+")


def count_words(text):
    """Return a Counter of the words in text."""
    return Counter(WORD.findall(text))


def top_n(text, n):
    """Return the n most frequent words (case-insensitive), ties broken alphabetically."""
    counts = Counter(w.lower() for w in WORD.findall(text))
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
