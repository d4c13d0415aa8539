"""Tables that fit the terminal: text wraps, a number, an id or a name is never cut.

Every table the CLI prints goes through `print_table`. Columns made with `number` keep
each cell whole (a rate, an interval, a count, an id); columns made with `words` wrap at
spaces only, each word whole (env names, task ids: what a user copies); every other
column wraps at spaces and folds a word too long for it. `fit` sizes the columns for the
console's width (rich reads ``COLUMNS``): numbers and words first, the rest shared among
the text columns, and when even that is too wide, the columns named in ``drop`` leave, in
that order. A table that still does not fit is printed as records (`print_table`): one
``header: value`` line per cell, nothing cut.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.errors import MarkupError
from rich.table import Column, Table
from rich.text import Text

__all__ = ["fit", "fits", "number", "print_records", "print_table", "text", "words"]

FLOOR = 8
"""Narrowest a text column gets (fewer when its longest word is shorter); a column's
``min_width`` sets its own."""

TIGHT = 3
"""Narrowest a text column gets when the numbers and words leave too little room for
`FLOOR`: its text folds more, and the table is still a table."""


def number(header: str, **kw: Any) -> Column:
    """A column whose cells are never broken: each line of a cell stays on one line."""
    return Column(header, no_wrap=True, justify=kw.pop("justify", "right"), **kw)


def text(header: str, **kw: Any) -> Column:
    """A column that wraps at spaces and folds a word longer than its width."""
    return Column(header, overflow="fold", **kw)


@dataclasses.dataclass
class _Words(Column):
    """A column that wraps at spaces only: no word of it is ever broken."""


def words(header: str, **kw: Any) -> Column:
    """A column that wraps at spaces and never breaks a word (an id, an env name)."""
    return _Words(header, overflow="fold", **kw)


def _lines(cell: Any) -> list[str]:
    """The lines a cell shows (a ``str`` cell is rich markup, as `Table` reads it).

    No ``:name:`` becomes an emoji, as on the CLI's consoles.
    """
    if isinstance(cell, Text):
        return cell.plain.split("\n")
    try:
        return Text.from_markup(str(cell), emoji=False).plain.split("\n")
    except MarkupError:  # rich will refuse it too; measure it as it is
        return str(cell).split("\n")


def _width(lines: Sequence[str]) -> int:
    return max((Text(line).cell_len for line in lines), default=0)


def _needs(column: Column, floor: int = FLOOR) -> tuple[int, int]:
    """The column's (floor, natural) content width, padding and borders not included.

    ``floor`` is that of a text column without a ``min_width``.
    """
    cells = [line for cell in column.cells for line in _lines(cell)]
    words = [w for line in _lines(column.header) for w in line.split()] or [""]
    natural = max(_width(cells), _width(_lines(column.header)), 1)
    if column.no_wrap:  # the cells never wrap; the header may, at its spaces
        return max(_width(cells), _width(words), 1), natural
    if isinstance(column, _Words):  # the cells wrap at their spaces, as the header
        return max(_width([w for line in cells for w in line.split()] + words), 1), natural
    return min(natural, _width(cells + words), column.min_width or floor), natural


def _chrome(table: Table) -> int:
    """Columns of the table that are not content: padding and borders."""
    n = len(table.columns)
    _, right, _, left = table.padding
    borders = (n - 1 + 2 * table.show_edge) if table.box else 0
    return n * (left + right) + borders


def _share(needs: list[tuple[int, int]], room: int) -> list[int]:
    """Widths: every column at its floor, then all grown evenly up to their natural width."""
    widths = [lo for lo, _ in needs]
    while sum(widths) < room:
        grow = [i for i, (w, (_, hi)) in enumerate(zip(widths, needs, strict=True)) if w < hi]
        if not grow:
            break
        widths[min(grow, key=lambda j: widths[j])] += 1
    return widths


def _copy(table: Table, drop: str | None = None) -> Table:
    """A copy of the table (its columns copied), without the column headed ``drop``."""
    kept = [c for c in table.columns if c.header != drop]
    out = copy.copy(table)
    out.columns = [dataclasses.replace(c, _index=i) for i, c in enumerate(kept)]
    return out


def _floor(table: Table, floor: int = FLOOR) -> int:
    return sum(_needs(c, floor)[0] for c in table.columns) + _chrome(table)


def fits(table: Table, width: int, floor: int = FLOOR) -> bool:
    """Whether the table fits ``width``, numbers and words whole, text at its floor.

    ``floor`` is that of a text column without a ``min_width``.
    """
    return _floor(table, floor) <= width


def _dropped(table: Table, width: int, drop: Sequence[str]) -> Table:
    """A copy of the table without the ``drop`` columns it must lose to fit ``width``.

    They leave in that order, until it fits; its caption names them.
    """
    table, dropped = _copy(table), list[str]()
    for header in drop:
        if not fits(table, width) and header in {c.header for c in table.columns}:
            table = _copy(table, drop=header)
            dropped.append(header)
    if dropped:
        table.caption = f"left out at {width} columns: {', '.join(dropped)} (--json has all)"
    return table


def fit(table: Table, width: int, drop: Sequence[str] = ()) -> Table:
    """A copy of the table with column widths set so it is at most ``width`` wide.

    Numbers and words keep their full width; text columns share what is left, never
    below their floor. If the numbers and the floors do not fit, the ``drop`` columns
    (headers) leave one by one, then text columns may go down to `TIGHT`; a table that
    still does not fit is returned unsized (`print_table` prints it as records).
    """
    table = _dropped(table, width, drop)
    floor = FLOOR if fits(table, width) else TIGHT
    if not fits(table, width, floor):
        return table
    widths = _share([_needs(c, floor) for c in table.columns], width - _chrome(table))
    for column, w in zip(table.columns, widths, strict=True):
        column.overflow = "ellipsis" if column.no_wrap else "fold"
        column.width, column.no_wrap = w, False  # a number fits whole; its header may wrap
    return table


def print_table(table: Table, console: Console, *, drop: Sequence[str] = ()) -> None:
    """Print the table fitted to the console's width (see `fit`).

    When even its narrowest form is too wide, it is printed as records (`print_records`),
    so that no id, name or number is ever cut.
    """
    if fits(_dropped(table, console.width, drop), console.width, TIGHT):
        console.print(fit(table, console.width, drop))
    else:
        print_records(table, console)


def _header(column: Column) -> str:
    """The column's header on one line (``pass/`` over ``fail`` is ``pass/fail``)."""
    lines = _lines(column.header)
    return "".join(a + ("" if a.endswith("/") else " ") for a in lines[:-1]) + lines[-1]


def print_records(table: Table, console: Console) -> None:
    """Print the table as records: a ``header: value`` line per cell.

    A blank line parts the rows; each line is whole (the terminal wraps it, nothing is cut).
    """
    if table.title:
        console.print(Text(str(table.title), style="italic"), soft_wrap=True)
    headers = [_header(column) for column in table.columns]
    for row, cells in enumerate(zip(*(column.cells for column in table.columns), strict=True)):
        if row:
            console.print()
        for header, cell in zip(headers, cells, strict=True):
            shown = "\n  ".join(_lines(cell))
            console.print(Text(f"{header}: {shown}"), soft_wrap=True, highlight=False)
    if table.caption:
        console.print(Text(str(table.caption), style="dim"), soft_wrap=True)
