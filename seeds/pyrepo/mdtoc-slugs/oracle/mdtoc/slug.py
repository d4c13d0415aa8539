"""Anchor slugs as GitHub makes them."""

import re

_DROP = re.compile(r"[^\w\- ]")


def slugify(title):
    """Lowercase, drop punctuation (keeping '-' and '_'), spaces to hyphens."""
    return _DROP.sub("", title.strip().lower()).replace(" ", "-")


class Slugger:
    """Unique slugs within one document: repeats get -1, -2, ... appended."""

    def __init__(self):
        self.seen = set()

    def slug(self, title):
        """The slug of title, made unique among the slugs returned so far."""
        base = slugify(title)
        candidate, n = base, 0
        while candidate in self.seen:
            n += 1
            candidate = f"{base}-{n}"
        self.seen.add(candidate)
        return candidate
