"""Line-oriented records with separated fields (the shared parser)."""


class RecordError(ValueError):
    """A malformed line; `line` is its 1-based number."""

    def __init__(self, line, message):
        super().__init__(f"line {line}: {message}")
        self.line = line


def parse_records(text, fields, *, sep=":", convert=None):
    """Dicts keyed by `fields`, one per line; blank lines and # comments are skipped.

    Args:
        text: the file's content.
        fields: the field names, in order.
        sep: the field separator.
        convert: field name -> callable applied to that field's value.

    Raises:
        RecordError: a line has the wrong number of fields or a value fails to convert.
    """
    convert = convert or {}
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        values = line.split(sep)
        if len(values) != len(fields):
            raise RecordError(number, f"expected {len(fields)} fields, got {len(values)}")
        record = dict(zip(fields, values))
        for name, func in convert.items():
            try:
                record[name] = func(record[name])
            except ValueError as exc:
                raise RecordError(number, f"bad {name} {record[name]!r}: {exc}") from exc
        records.append(record)
    return records
