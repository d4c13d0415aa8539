"""Finding ATX headings (# Title) in Markdown."""

import re

HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*$")


def parse_headings(text):
    """(level, title) of every heading, in document order."""
    out = []
    for line in text.splitlines():
        match = HEADING.match(line)
        if match:
            out.append((len(match.group(1)), match.group(2)))
    return out
