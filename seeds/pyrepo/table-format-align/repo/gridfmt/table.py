"""Laying out a table."""

from gridfmt.cells import cell_text

SEP = " | "


def format_table(rows, headers):
    """Rows (sequences of values) under headers, columns padded to equal width."""
    ncols = len(headers)
    for i, row in enumerate(rows):
        if len(row) != ncols:
            raise ValueError(f"row {i} has {len(row)} cells, expected {ncols}")
    texts = [[cell_text(v) for v in row] for row in rows]
    widths = [max([len(str(h))] + [len(r[c]) for r in texts]) for c, h in enumerate(headers)]
    lines = [SEP.join(str(h).ljust(w) for h, w in zip(headers, widths))]
    lines.append("-+-".join("-" * w for w in widths))
    for row in texts:
        lines.append(SEP.join(t.ljust(w) for t, w in zip(row, widths)))
    return "\n".join(lines)
