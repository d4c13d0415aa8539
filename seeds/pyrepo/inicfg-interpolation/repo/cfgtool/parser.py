"""Parsing INI text: [section] headers, key = value lines, ; and # comments."""


class ParseError(ValueError):
    """Malformed configuration text."""


def parse_ini(text):
    """{section: {key: value}}; section and key names are lower-cased."""
    sections = {}
    current = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in ";#":
            continue
        if line.startswith("["):
            if not line.endswith("]") or not line[1:-1].strip():
                raise ParseError(f"line {number}: bad section header {raw!r}")
            current = sections.setdefault(line[1:-1].strip().lower(), {})
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ParseError(f"line {number}: expected 'key = value', got {raw!r}")
        if current is None:
            raise ParseError(f"line {number}: key outside of any section")
        current[key.strip().lower()] = value.strip()
    return sections
