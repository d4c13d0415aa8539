"""Flattening nested dicts and lists into one level of dotted keys."""


def flatten(obj, sep=".", prefix=""):
    """Flatten dicts and lists into {dotted.key: leaf}; empty containers are leaves."""
    out = {}
    if isinstance(obj, dict) and obj:
        items = ((str(k), v) for k, v in obj.items())
    elif isinstance(obj, list) and obj:
        items = ((str(i), v) for i, v in enumerate(obj))
    else:
        return {prefix: obj} if prefix else obj
    for key, value in items:
        path = f"{prefix}{sep}{key}" if prefix else key
        if isinstance(value, (dict, list)) and value:
            out.update(flatten(value, sep, path))
        else:
            out[path] = value
    return out
