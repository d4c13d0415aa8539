"""Flattening nested dicts and lists into one level of dotted keys, and back."""


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


class _Node(dict):
    """An inner level while rebuilding (a dict of children)."""


def _listify(node):
    if not isinstance(node, _Node):
        return node
    children = {k: _listify(v) for k, v in node.items()}
    if children and set(children) == {str(i) for i in range(len(children))}:
        return [children[str(i)] for i in range(len(children))]
    return children


def unflatten(flat, sep="."):
    """Rebuild nested data from {dotted.key: leaf} (the inverse of flatten).

    Raises:
        ValueError: a key is both a leaf and the prefix of another key.
    """
    root = _Node()
    for key, value in flat.items():
        parts = key.split(sep)
        node = root
        for i, part in enumerate(parts[:-1]):
            child = node.setdefault(part, _Node())
            if not isinstance(child, _Node):
                raise ValueError(f"{sep.join(parts[: i + 1])!r} is a leaf and a prefix of {key!r}")
            node = child
        last = parts[-1]
        if last in node:
            raise ValueError(f"{key!r} conflicts with another key")
        node[last] = value
    return _listify(root)
