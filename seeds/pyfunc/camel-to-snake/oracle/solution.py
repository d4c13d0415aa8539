def camel_to_snake(name):
    """Convert a camelCase or PascalCase identifier to snake_case."""
    out = []
    for i, ch in enumerate(name):
        if ch.isupper():
            out.append(("_" if i else "") + ch.lower())
        else:
            out.append(ch)
    return "".join(out)
