"""One line of delimited text <-> a list of fields."""

QUOTE = '"'


def to_line(fields, sep=","):
    """Join fields, quoting those that contain the separator, a quote or a newline."""
    out = []
    for field in fields:
        if sep in field or QUOTE in field or "\n" in field or "\r" in field:
            field = QUOTE + field.replace(QUOTE, QUOTE * 2) + QUOTE
        out.append(field)
    return sep.join(out)


def split_line(line, sep=","):
    """Split one line into its fields (the inverse of to_line).

    Raises:
        ValueError: a quoted field is not closed, or text follows its closing quote.
    """
    fields = []
    i, n = 0, len(line)
    while True:
        if i < n and line[i] == QUOTE:
            chars = []
            i += 1
            while True:
                if i >= n:
                    raise ValueError(f"unclosed quoted field in {line!r}")
                if line[i] == QUOTE:
                    if line.startswith(QUOTE, i + 1):
                        chars.append(QUOTE)
                        i += 2
                        continue
                    i += 1
                    break
                chars.append(line[i])
                i += 1
            fields.append("".join(chars))
            if i < n and not line.startswith(sep, i):
                raise ValueError(f"unexpected text after a closing quote at {i} in {line!r}")
        else:
            end = line.find(sep, i)
            end = n if end < 0 else end
            fields.append(line[i:end])
            i = end
        if i >= n:
            return fields
        i += len(sep)
