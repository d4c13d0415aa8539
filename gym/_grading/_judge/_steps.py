"""One step of a conversation as the judge reads it: the context before it, and the step.

A conversation is a list of OpenAI-style chat messages. Step ``k`` is the ``k``-th
assistant message (from 0) with the tool results that follow it; a conversation holding
fewer assistant messages is judged at its last one (a trainer passes the conversation up
to and including the step, whose index may count parallel calls). The system message
and the task prompt (the first user message, when it is the task) are left out of the
context: the judge's prompt states the task itself.

Texts are cut so that a prompt stays bounded: each message to ``per_message`` characters
(its head and tail kept), the context to its last ``context_chars`` characters (the
steps nearest the judged one are kept).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["StepView", "render_messages", "split_step"]

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


def _calls(message: dict[str, Any]) -> list[str]:
    """The tool calls of a message as ``call NAME ARGUMENTS`` lines."""
    calls = message.get("tool_calls")
    out = []
    for call in calls if isinstance(calls, list) else []:
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict):
            args = fn.get("arguments")
            text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            out.append(f"call {fn.get('name', '')} {text}")
    return out


def _cut(text: str, limit: int) -> str:
    """Head and tail of a text longer than ``limit`` characters."""
    if len(text) <= limit:
        return text
    half = max(limit // 2, 1)
    return text[:half] + _CUT.format(n=len(text) - 2 * half) + text[-half:]


def render_messages(messages: Sequence[dict[str, Any]], per_message: int = 4000) -> str:
    """Messages as ``[role]`` blocks, each with its text and tool calls."""
    blocks = []
    for m in messages:
        body = [_content(m.get("content")), *_calls(m)]
        text = "\n".join(b for b in body if b)
        blocks.append(f"[{m.get('role', '?')}]\n{_cut(text, per_message)}")
    return "\n\n".join(blocks)


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
    context = render_messages(before, per_message)
    if len(context) > context_chars:
        cut = len(context) - context_chars
        context = f"[... {cut} earlier characters cut ...]\n" + context[cut:]
    step = render_messages(conversation[start:end], per_message)
    return StepView(context or "(no earlier steps)", step, index)
