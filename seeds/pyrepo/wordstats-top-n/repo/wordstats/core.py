"""Counting words."""

import re
from collections import Counter

WORD = re.compile(r"[A-Za-z']+")


def count_words(text):
    """Return a Counter of the words in text."""
    return Counter(WORD.findall(text))


def top_n(text, n):
    """Return the n most frequent words as (word, count) pairs."""
    return count_words(text).most_common(n)
