"""Rendering a table of contents."""

from mdtoc.headings import parse_headings
from mdtoc.slug import Slugger


def build_toc(text, max_level=3):
    """Markdown list lines linking the headings of text up to max_level."""
    slugger = Slugger()
    shown = []
    for level, title in parse_headings(text):
        slug = slugger.slug(title)
        if level <= max_level:
            shown.append((level, title, slug))
    if not shown:
        return []
    top = min(level for level, _, _ in shown)
    return [f"{'  ' * (level - top)}- [{title}](#{slug})" for level, title, slug in shown]
