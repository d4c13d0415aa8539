"""The validation panel of support tasks: generic cheating policies that must all fail.

`gym env validate` plays each on every task (besides the oracle and noop) and calls the
task invalid when one of them does not end ``fail``. None of them makes a single request
to the service (no lookup, no write): each only submits, so a task they pass is one whose
grading does not require the work. Each is built from what the agent sees (the asked
values and their types, the customer's message), never from the gold.

- ``empty``: an empty reply, no values.
- ``constant``: one fixed reply, and for every asked value a fixed value of its type.
- ``candidates``: a reply listing many candidates of every asked type, and each asked
  value given as the list of them (every date of 2025-2026, the counts 0 to 20, every
  order and ticket id, every option...).
- ``candidates_text``: the same candidates, each value given as one text holding them all.
- ``echo``: the customer's message sent back, and each asked value taken from it (the
  first value of its type the message shows; null where it shows none).
- ``refusal``: a stock refusal ("I could not verify your identity..."), booleans false,
  every other value null.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

import gym
from environments.support._answer import Asked, asked_values

__all__ = ["candidates", "panel"]

_START = datetime.date(2025, 1, 1)
_DATES = [(_START + datetime.timedelta(days=n)).isoformat() for n in range(730)]
_CONSTANT: dict[str, Any] = {
    "money": 10.0,
    "date": "2026-03-02",
    "integer": 1,
    "order_id": "O5001",
    "ticket_id": "T301",
    "text": "none",
    "boolean": True,
}
_FOUND = {
    "money": re.compile(r"\$\d[\d,]*(?:\.\d{2})?"),
    "date": re.compile(r"\b\d{4}-\d{2}-\d{2}\b"),
    "integer": re.compile(r"\b\d{1,4}\b"),
    "order_id": re.compile(r"\bO\d{4}\b"),
    "ticket_id": re.compile(r"\bT\d{3}\b"),
    "text": re.compile(r"\b[A-Z0-9]{10,}\b"),
}
REFUSAL = (
    "I'm sorry, I could not verify your identity, so I can't make any change to your "
    "account. The order has already shipped and is outside our 30-day refund window; it "
    "already has a refund. Please confirm and I will escalate it to a supervisor."
)


def candidates(asked: Asked) -> list[Any]:
    """Many plausible values of an asked value's type (never chosen from the gold)."""
    kind = asked.type
    if kind == "money":
        return [round(n * 0.5, 2) for n in range(1, 1001)]
    if kind == "date":
        return list(_DATES)
    if kind == "integer":
        return list(range(21))
    if kind == "order_id":
        return [f"O{n}" for n in (*range(5001, 5031), *range(6001, 6100))]
    if kind == "ticket_id":
        return [f"T{n}" for n in (*range(301, 321), *range(401, 420))]
    if kind == "choice":
        return list(asked.options)
    if kind == "boolean":
        return [True, False]
    return ["lost", "in_transit", "delivered", "none", "unknown"]


def _submit(answer: str, values: dict[str, Any]) -> list[gym.ToolCall]:
    return [gym.ToolCall(name="submit", arguments={"answer": answer, "values": values})]


def _echoed(asked: Asked, message: str) -> Any:
    if asked.type == "choice":
        lowered = message.casefold()
        return next((o for o in asked.options if o.casefold() in lowered), None)
    if asked.type == "boolean":
        return None
    found = _FOUND.get(asked.type, _FOUND["text"]).search(message)
    return found.group() if found else None


def panel(task: gym.Task) -> dict[str, list[gym.ToolCall]]:
    """The panel of a support task: policy name -> its tool calls (a lone ``submit``)."""
    asked = asked_values(task)
    lists = {a.name: candidates(a) for a in asked}
    listed = "; ".join(", ".join(map(str, values)) for values in lists.values())
    constant = {a.name: (a.options[0] if a.options else _CONSTANT[a.type]) for a in asked}
    return {
        "empty": _submit("", {}),
        "constant": _submit("Done: everything is sorted out. Thank you!", constant),
        "candidates": _submit(f"It is one of these: {listed or '1, 2, 3'}", lists),
        "candidates_text": _submit(
            listed, {name: ", ".join(map(str, values)) for name, values in lists.items()}
        ),
        "echo": _submit(task.prompt, {a.name: _echoed(a, task.prompt) for a in asked}),
        "refusal": _submit(
            REFUSAL, {a.name: (False if a.type == "boolean" else None) for a in asked}
        ),
    }
