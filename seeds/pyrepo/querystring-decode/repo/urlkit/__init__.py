"""URL query strings."""

from urlkit.build import build_query
from urlkit.query import parse_query, split_url

__all__ = ["build_query", "parse_query", "split_url"]
