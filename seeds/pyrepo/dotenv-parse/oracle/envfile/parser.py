"""Parsing .env text into a dict."""

import re

LINE = re.compile(r"^\s*(?:export\s+)?([^=\s]*)\s*=\s*(.*?)\s*$")
KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


def _expand(value, values, environ):
    return VAR.sub(lambda m: values.get(m.group(1), environ.get(m.group(1), "")), value)


def _rest_ok(rest):
    rest = rest.strip()
    return not rest or rest.startswith("#")


def _double_quoted(raw, number):
    out, i = [], 1
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw) and raw[i + 1] in ESCAPES:
            out.append(ESCAPES[raw[i + 1]])
            i += 2
            continue
        if ch == '"':
            if not _rest_ok(raw[i + 1 :]):
                raise ValueError(f"line {number}: text after the closing quote")
            return "".join(out)
        out.append(ch)
        i += 1
    raise ValueError(f"line {number}: unclosed double quote")


def parse(text, environ=None):
    """{KEY: value} from the lines of a .env file, in file order.

    Raises:
        ValueError: a malformed line (the message names its line number).
    """
    environ = environ if environ is not None else {}
    values = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = LINE.match(line)
        if not match or not KEY.match(match.group(1)):
            raise ValueError(f"line {number}: expected KEY=value, got {line!r}")
        key, raw = match.groups()
        if raw.startswith("'"):
            end = raw.find("'", 1)
            if end < 0:
                raise ValueError(f"line {number}: unclosed single quote")
            if not _rest_ok(raw[end + 1 :]):
                raise ValueError(f"line {number}: text after the closing quote")
            value = raw[1:end]
        elif raw.startswith('"'):
            value = _expand(_double_quoted(raw, number), values, environ)
        elif raw.startswith("#"):
            value = ""
        else:
            value = re.split(r"\s+#", raw, maxsplit=1)[0].strip()
            value = _expand(value, values, environ)
        values.pop(key, None)
        values[key] = value
    return values
