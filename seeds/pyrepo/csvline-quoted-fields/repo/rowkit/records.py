"""Files with a header line, as lists of dicts."""

from rowkit.split import split_line, to_line


def read_records(text, sep=","):
    """Parse text whose first line names the columns into a list of dicts."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = split_line(lines[0], sep)
    records = []
    for number, line in enumerate(lines[1:], start=2):
        values = split_line(line, sep)
        if len(values) != len(header):
            raise ValueError(f"line {number}: {len(values)} fields, expected {len(header)}")
        records.append(dict(zip(header, values)))
    return records


def write_records(records, columns, sep=","):
    """Write dicts as text with a header line (missing values are empty)."""
    lines = [to_line(columns, sep)]
    for record in records:
        lines.append(to_line([str(record.get(c, "")) for c in columns], sep))
    return "\n".join(lines) + "\n"
