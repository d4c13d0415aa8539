"""Parsing .env text into a dict."""


def parse(text):
    """{KEY: value} from KEY=value lines (blank lines and # comments skipped)."""
    values = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        key, _, value = stripped.partition("=")
        values[key.strip()] = value.strip()
    return values
