"""Anchor slugs as GitHub makes them."""

import re

_DROP = re.compile(r"[^\w\- ]")


def slugify(title):
    """Lowercase, drop punctuation (keeping '-' and '_'), spaces to hyphens."""
    return _DROP.sub("", title.strip().lower()).replace(" ", "-")
