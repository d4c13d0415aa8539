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
    """Split one line into its fields (the inverse of to_line)."""
    fields = []
    for field in line.split(sep):
        if len(field) >= 2 and field[0] == field[-1] == QUOTE:
            field = field[1:-1]
        fields.append(field)
    return fields
