"""Finding ATX headings (# Title) in Markdown."""

import re

HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*$")
CLOSING = re.compile(r"[ \t]+#+$")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def parse_headings(text):
    """(level, title) of every heading outside fenced code blocks, in document order."""
    out = []
    fence = None
    for line in text.splitlines():
        opener = FENCE.match(line)
        if fence is not None:
            if opener and opener.group(1)[0] == fence:
                fence = None
            continue
        if opener:
            fence = opener.group(1)[0]
            continue
        match = HEADING.match(line)
        if match:
            title = CLOSING.sub("", match.group(2))
            out.append((len(match.group(1)), title))
    return out
