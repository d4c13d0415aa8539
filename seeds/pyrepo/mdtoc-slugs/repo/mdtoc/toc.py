"""Rendering a table of contents."""

from mdtoc.headings import parse_headings
from mdtoc.slug import slugify


def build_toc(text, max_level=3):
    """Markdown list lines linking the headings of text up to max_level."""
    headings = parse_headings(text)
    shown = [(level, title) for level, title in headings if level <= max_level]
    if not shown:
        return []
    top = min(level for level, _ in shown)
    return [f"{'  ' * (level - top)}- [{title}](#{slugify(title)})" for level, title in shown]
