"""Tables of contents for Markdown documents."""

from mdtoc.headings import parse_headings
from mdtoc.slug import slugify
from mdtoc.toc import build_toc

__all__ = ["build_toc", "parse_headings", "slugify"]
