"""The validation panel of SQL tasks: generic cheating policies that must all fail.

`gym env validate` plays each of them on every task (besides the oracle and noop) and
calls the task invalid when one of them does not end ``fail``. None does the task's
work; each ends with ``submit``:

- read tasks (an answer query):
  - ``no_rows``: the requested columns and no row (the gold query's shape, ``WHERE
    false``: the strongest empty answer, with the right number of columns);
  - ``null_row``: one row of NULLs in the requested columns;
  - ``constant``: ``SELECT 1``;
  - ``whole_table``: every row of the first table the task reads.
- write tasks (the final database):
  - ``unchanged``: submit the database as it is;
  - ``delete_scope``: delete every row of each table the task may change (each in its
    own call, so that one refused by a foreign key leaves the others deleted).
"""

from __future__ import annotations

from environments.sql.grading import TaskSpec
from gym import ToolCall

__all__ = ["READ_PANEL", "WRITE_PANEL", "panel"]

READ_PANEL = ("no_rows", "null_row", "constant", "whole_table")
WRITE_PANEL = ("unchanged", "delete_scope")


def _submit(answer: str = "") -> ToolCall:
    return ToolCall(name="submit", arguments={"answer_query": answer} if answer else {})


def _sql(query: str) -> ToolCall:
    return ToolCall(name="sql", arguments={"query": query})


def _shape(gold: str) -> str:
    """The gold query as a subquery (its own lines, so a trailing comment stays closed)."""
    text = gold.strip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    return f"(\n{text}\n)"


def panel(spec: TaskSpec) -> dict[str, list[ToolCall]]:
    """The panel of one task: entry name -> its tool calls (the last one a submit)."""
    if spec.kind == "read":
        shape = _shape(spec.gold)
        calls = {
            "no_rows": [_submit(f"SELECT g.* FROM {shape} AS g WHERE false")],
            "null_row": [
                _submit(f"SELECT g.* FROM (SELECT 1) AS one LEFT JOIN {shape} AS g ON false")
            ],
            "constant": [_submit("SELECT 1")],
        }
        if spec.scope:
            calls["whole_table"] = [_submit(f"SELECT * FROM {spec.table(spec.scope[0])}")]
        return calls
    deletes = [_sql(f"DELETE FROM {spec.table(table)}") for table in reversed(spec.scope)]
    return {"unchanged": [_submit()], "delete_scope": [*deletes, _submit()]}
