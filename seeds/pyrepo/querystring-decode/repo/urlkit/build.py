"""Writing query strings."""

SAFE = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def quote(text):
    """Percent-encode text as UTF-8; spaces become '+'."""
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in SAFE:
            out.append(ch)
        elif ch == " ":
            out.append("+")
        else:
            out.append(f"%{byte:02X}")
    return "".join(out)


def build_query(params):
    """'k=v&k=w' from {key: [values]} (a plain string value counts as one value)."""
    pieces = []
    for key, values in params.items():
        if isinstance(values, str):
            values = [values]
        for value in values:
            pieces.append(f"{quote(key)}={quote(value)}")
    return "&".join(pieces)
