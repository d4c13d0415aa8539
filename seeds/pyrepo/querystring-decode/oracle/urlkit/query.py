"""Reading query strings."""

HEX = set("0123456789abcdefABCDEF")


def unquote(text):
    """Decode '+' and UTF-8 percent escapes; a malformed escape is kept literally."""
    text = text.replace("+", " ")
    out = bytearray()
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "%" and i + 2 < len(text) and text[i + 1] in HEX and text[i + 2] in HEX:
            out.append(int(text[i + 1 : i + 3], 16))
            i += 3
        else:
            out += ch.encode("utf-8")
            i += 1
    return out.decode("utf-8", errors="replace")


def parse_query(qs):
    """{key: [values]} from 'k=v&k=w' (a leading '?' is ignored)."""
    if qs.startswith("?"):
        qs = qs[1:]
    params = {}
    for piece in qs.split("&"):
        if not piece:
            continue
        key, _, value = piece.partition("=")
        params.setdefault(unquote(key), []).append(unquote(value))
    return params


def split_url(url):
    """(path, query dict, fragment) of a URL path such as '/a?x=1#top'."""
    rest, _, fragment = url.partition("#")
    path, _, query = rest.partition("?")
    return path, parse_query(query), fragment
