"""A prefix tree of words with usage counts."""

from prefixtree.loader import from_text
from prefixtree.trie import Trie

__all__ = ["Trie", "from_text"]
