"""Laying out a table."""

from decimal import Decimal

from gridfmt.cells import cell_text

SEP = " | "


def _pad(text, width, how):
    if how == "r":
        return text.rjust(width)
    if how == "c":
        total = width - len(text)
        left = total // 2
        return " " * left + text + " " * (total - left)
    return text.ljust(width)


def _is_number(value):
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def _alignment(align, rows, ncols):
    if align is None:
        return "l" * ncols
    if align == "auto":
        out = []
        for c in range(ncols):
            cells = [row[c] for row in rows if row[c] is not None]
            numeric = bool(cells) and all(_is_number(v) for v in cells)
            out.append("r" if numeric else "l")
        return "".join(out)
    if len(align) != ncols or set(align) - set("lrc"):
        raise ValueError(f"align must be 'auto' or {ncols} of 'l', 'r', 'c'; got {align!r}")
    return align


def format_table(rows, headers, *, align=None):
    """Rows (sequences of values) under headers, columns padded to equal width.

    align: None (all left), "auto" (numeric columns right) or one of l/r/c per column.
    """
    ncols = len(headers)
    for i, row in enumerate(rows):
        if len(row) != ncols:
            raise ValueError(f"row {i} has {len(row)} cells, expected {ncols}")
    how = _alignment(align, rows, ncols)
    texts = [[cell_text(v) for v in row] for row in rows]
    widths = [max([len(str(h))] + [len(r[c]) for r in texts]) for c, h in enumerate(headers)]
    lines = [SEP.join(_pad(str(h), w, a) for h, w, a in zip(headers, widths, how))]
    lines.append("-+-".join("-" * w for w in widths))
    for row in texts:
        lines.append(SEP.join(_pad(t, w, a) for t, w, a in zip(row, widths, how)))
    return "\n".join(lines)
