"""Where a stored conversation's user turns and steps are: plain functions over messages.

A stored episode keeps its conversation (OpenAI messages), its steps and, since turns
were recorded, a `TurnsRow`: which assistant message made each step and the steps that
ended a user turn. After a step that ended a turn, the rollout wrote the tool messages of
that assistant message, then the user's next message. These functions find, from those,
which user turn each message belongs to and each turn's spans. An episode stored without
a `TurnsRow` is one turn, its steps placed by the shape of its messages (`step_said`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from gym._store._models import TurnsRow

__all__ = ["UserTurn", "message_turns", "said_by_step", "step_said", "user_turns"]


class UserTurn(BaseModel):
    """One user turn of an episode, as spans of its messages and steps."""

    turn: int
    """Its index (0 is the task prompt's)."""
    messages: tuple[int, int]
    """Its messages, ``[start, end)`` (turn 0 starts with the system prompt)."""
    steps: tuple[int, int]
    """Its steps, ``[start, end)``."""
    end_step: int | None = None
    """The step that ended it (the final tool), or None when the episode ended otherwise
    (a limit, an error)."""


def step_said(messages: Sequence[dict[str, Any]]) -> list[int]:
    """For each step, which assistant message made it (counted from 0), from the shape alone.

    For an episode stored without its `TurnsRow.step_assistant`: each step was answered by
    one ``tool`` message, or by a ``user`` message right after the assistant message (a
    turn without a valid call).
    """
    made: list[int] = []
    said = -1
    previous = None
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            said += 1
        elif said >= 0 and (role == "tool" or (role == "user" and previous == "assistant")):
            made.append(said)
        previous = role
    return made


def said_by_step(messages: Sequence[dict[str, Any]], turns: TurnsRow) -> list[int]:
    """For each step, which assistant message made it: as recorded, else from the shape."""
    return list(turns.step_assistant) if turns.step_assistant else step_said(messages)


def _openers(messages: Sequence[dict[str, Any]], turns: TurnsRow) -> list[int]:
    """The index in ``messages`` of the user message that opened each turn after the first."""
    assistant = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    made = said_by_step(messages, turns)
    openers: list[int] = []
    for end in turns.turn_ends():
        if end.user is None or end.step >= len(made) or made[end.step] >= len(assistant):
            continue
        after = max(assistant[made[end.step]], openers[-1] if openers else -1)
        found = next(
            (i for i in range(after + 1, len(messages)) if messages[i].get("role") == "user"),
            None,
        )
        if found is None:
            break
        openers.append(found)
    return openers


def message_turns(messages: Sequence[dict[str, Any]], turns: TurnsRow) -> list[int]:
    """The user turn of each message (all 0 for an episode with no recorded turn end)."""
    openers = set(_openers(messages, turns))
    out, turn = [], 0
    for i in range(len(messages)):
        turn += i in openers
        out.append(turn)
    return out


def user_turns(messages: Sequence[dict[str, Any]], turns: TurnsRow, n_steps: int) -> list[UserTurn]:
    """The user turns of an episode with their message and step spans, in order.

    Args:
        messages: the stored conversation.
        turns: the episode's recorded turns (`TurnsRow.empty` for one stored without).
        n_steps: how many steps the episode stored.
    """
    starts = [0, *_openers(messages, turns)]
    bounds = [*starts, len(messages)]
    ended = {e.turn: e.step for e in turns.turn_ends()}
    step_turns = [turns.turn_of(i) for i in range(n_steps)]
    out: list[UserTurn] = []
    for turn in range(len(starts)):
        steps = [i for i, t in enumerate(step_turns) if t == turn]
        first = steps[0] if steps else (out[-1].steps[1] if out else 0)
        out.append(
            UserTurn(
                turn=turn,
                messages=(bounds[turn], bounds[turn + 1]),
                steps=(first, steps[-1] + 1 if steps else first),
                end_step=ended.get(turn),
            )
        )
    return out
