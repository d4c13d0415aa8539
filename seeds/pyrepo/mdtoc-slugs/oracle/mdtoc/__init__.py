"""Tables of contents for Markdown documents."""

from mdtoc.headings import parse_headings
from mdtoc.slug import Slugger, slugify
from mdtoc.toc import build_toc

__all__ = ["Slugger", "build_toc", "parse_headings", "slugify"]
