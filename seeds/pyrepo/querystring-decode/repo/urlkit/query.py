"""Reading query strings."""


def parse_query(qs):
    """{key: [values]} from 'k=v&k=w' (a leading '?' is ignored)."""
    if qs.startswith("?"):
        qs = qs[1:]
    params = {}
    if not qs:
        return params
    for piece in qs.split("&"):
        key, value = piece.split("=", 1)
        params[key] = [value]
    return params


def split_url(url):
    """(path, query dict, fragment) of a URL path such as '/a?x=1#top'."""
    rest, _, fragment = url.partition("#")
    path, _, query = rest.partition("?")
    return path, parse_query(query), fragment
