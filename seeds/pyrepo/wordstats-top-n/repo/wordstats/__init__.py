"""Word statistics."""

from wordstats.core import count_words, top_n

__all__ = ["count_words", "top_n"]
