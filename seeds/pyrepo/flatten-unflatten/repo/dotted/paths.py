"""Looking up a dotted path in nested data."""

_MISSING = object()


def get_path(obj, path, default=_MISSING, sep="."):
    """The value at a dotted path ('a.b.0'); default (or KeyError) when absent."""
    current = obj
    for part in path.split(sep):
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            if default is _MISSING:
                raise KeyError(path)
            return default
    return current
