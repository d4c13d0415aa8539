"""Building a trie from text."""

import re

from prefixtree.trie import Trie

WORD = re.compile(r"[a-z]+")


def from_text(text):
    """A Trie of the lower-cased words of text, counted."""
    trie = Trie()
    for word in WORD.findall(text.lower()):
        trie.insert(word)
    return trie
