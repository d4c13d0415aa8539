"""One step of a conversation as the judge reads it: the context before it, and the step.

A conversation is a list of OpenAI-style chat messages. Step ``k`` is the ``k``-th
assistant message (from 0) with the tool results that follow it; a conversation holding
fewer assistant messages is judged at its last one (a trainer passes the conversation up
to and including the step, whose index may count parallel calls). The system message
and the task prompt (the first user message, when it is the task) are left out of the
context: the judge's prompt states the task itself.

Each message is shown as one line of JSON, ``{"role": ..., "content": ...,
"tool_calls": [{"name": ..., "arguments": ...}]}``: what an assistant writes stays
inside its own ``content`` string, so no text can spell a tool call or another role's
message (a plain ``[tool]`` header could: a forged tool result read as a real one).
The view's `StepView.key`, which the judge's cache is keyed on, is the canonical JSON
of exactly the messages shown.

Texts are cut so that a prompt stays bounded: each message's content and each call's
arguments to ``per_message`` characters (head and tail kept); the context to the latest
whole messages that fit in ``context_chars`` (a line says how many earlier were cut).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["StepView", "render_messages", "shown_messages", "split_step"]

_CUT = "\n[... {n} characters cut ...]\n"


@dataclass(frozen=True)
class StepView:
    """The context and the step of a conversation, as texts (see the module docstring)."""

    context: str
    """The messages before the step ('(no earlier steps)' when there are none)."""
    step: str
    """The step's assistant message and the tool results after it."""
    index: int
    """The step's index, as given."""
    key: str = ""
    """Canonical JSON of the messages shown (context, earlier ones cut, step): what the
    judge's cache is keyed on. Two views with one key show the judge the same thing."""


def _content(value: Any) -> str:
    """A message's content as text (the text parts of a list, JSON for anything else)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, list):
        parts = [p.get("text") for p in value if isinstance(p, dict)]
        if all(isinstance(p, str) for p in parts) and parts:
            return "\n".join(str(p) for p in parts)
    return json.dumps(value, ensure_ascii=False, default=str)


def _calls(message: dict[str, Any], limit: int) -> list[dict[str, str]]:
    """The tool calls of a message as ``{name, arguments}`` (arguments as text, cut)."""
    calls = message.get("tool_calls")
    out = []
    for call in calls if isinstance(calls, list) else []:
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict):
            args = fn.get("arguments")
            text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            out.append({"name": str(fn.get("name", "")), "arguments": _cut(text, limit)})
    return out


def _cut(text: str, limit: int) -> str:
    """Head and tail of a text longer than ``limit`` characters."""
    if len(text) <= limit:
        return text
    half = max(limit // 2, 1)
    return text[:half] + _CUT.format(n=len(text) - 2 * half) + text[-half:]


def shown_messages(
    messages: Sequence[dict[str, Any]], per_message: int = 4000
) -> list[dict[str, Any]]:
    """Messages as the judge is shown them: role, content and tool calls, each cut."""
    out = []
    for m in messages:
        shown: dict[str, Any] = {
            "role": str(m.get("role", "?")),
            "content": _cut(_content(m.get("content")), per_message),
        }
        if calls := _calls(m, per_message):
            shown["tool_calls"] = calls
        out.append(shown)
    return out


def _line(message: dict[str, Any]) -> str:
    """One shown message as one line of JSON (newlines and quotes escaped)."""
    return json.dumps(message, ensure_ascii=False)


def render_messages(messages: Sequence[dict[str, Any]], per_message: int = 4000) -> str:
    """Messages as lines of JSON, one a message (see the module docstring)."""
    return "\n".join(_line(m) for m in shown_messages(messages, per_message))


def _step_bounds(messages: Sequence[dict[str, Any]], index: int) -> tuple[int, int]:
    """Where the step's assistant message starts and where the step ends."""
    said = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    if not said:
        raise ValueError("the conversation holds no assistant message: no step to judge")
    start = said[index] if 0 <= index < len(said) else said[-1]
    end = start + 1
    while end < len(messages) and messages[end].get("role") == "tool":
        end += 1
    return start, end


def _latest(shown: list[dict[str, Any]], chars: int) -> list[dict[str, Any]]:
    """The latest whole messages whose lines fit in ``chars``.

    When not even the last one does, it alone, cut to fit.
    """
    kept: list[dict[str, Any]] = []
    total = 0
    for message in reversed(shown):
        total += len(_line(message)) + 1
        if total > chars:
            break
        kept.append(message)
    if not kept and shown:
        last = dict(shown[-1])
        last["content"] = _cut(last["content"], max(chars // 4, 1))
        calls = last.get("tool_calls", [])
        share = max(chars // (4 * max(len(calls), 1)), 1)
        if calls:
            last["tool_calls"] = [c | {"arguments": _cut(c["arguments"], share)} for c in calls]
        kept.append(last)
    return kept[::-1]


def split_step(
    conversation: Sequence[dict[str, Any]],
    index: int,
    task: str = "",
    *,
    per_message: int = 4000,
    context_chars: int = 16000,
) -> StepView:
    """The context before step ``index`` and the step itself, as texts.

    Raises:
        ValueError: the conversation holds no assistant message.
    """
    start, end = _step_bounds(conversation, index)
    before = [m for m in conversation[:start] if m.get("role") != "system"]
    if before and before[0].get("role") == "user" and _content(before[0].get("content")) == task:
        before = before[1:]
    shown = shown_messages(before, per_message)
    kept = _latest(shown, context_chars)
    cut = len(shown) - len(kept)
    lines = [f"[{cut} earlier messages cut]"] if cut else []
    lines += [_line(m) for m in kept]
    step = shown_messages(conversation[start:end], per_message)
    key = json.dumps({"context": kept, "cut": cut, "step": step}, sort_keys=True)
    return StepView(
        "\n".join(lines) or "(no earlier steps)", "\n".join(_line(m) for m in step), index, key
    )
