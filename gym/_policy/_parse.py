"""Reading a tool call out of a model's text, for models without native tool calls.

The one format boxgym teaches (in the system prompt, see `tools_prompt`) is Hermes
style: a JSON object with ``name`` and ``arguments`` between tags::

    <tool_call>
    {"name": "bash", "arguments": {"command": "ls"}}
    </tool_call>

`parse_tool_call` reads that format first and tolerates, in this order:

1. a ``<tool_call>`` block holding a list of calls (SmolLM2 writes that), or with its
   closing tag missing (the generation stopped), or ``parameters`` instead of
   ``arguments`` (Llama 3 JSON style), or arguments given as a JSON string;
2. a bare JSON object with ``name`` and ``arguments`` (or ``parameters``) anywhere in
   the text, fenced as ```json or not;
3. a fenced ```bash (or ```sh / ```shell) block, read as a ``bash`` call when the
   environment offers a ``bash`` tool.

Every call of the ``<tool_call>`` blocks is read, in order (`TextCall.calls`: a model
may call several tools in one message), up to the first that cannot be read; of the
fallbacks only the first call is taken. Text that holds none of these is a plain answer
(no call, no error); a ``<tool_call>`` block that cannot be read gives no call and an
error that says what was wrong and shows the expected form.

Every parse here is total and bounded, whatever the text: linear patterns (no
backtracking over runs of whitespace), JSON measured before it is decoded and walked
within `gym._core._tools.ARGUMENTS` after (a call nested 100,000 levels deep, NaN, a number
of 5,000 digits are malformed output like any other, never an exception).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any, NamedTuple

from gym._core._tools import (
    ARGUMENTS,
    ToolCall,
    check_name,
    decode_arguments,
    load_json,
    scan_json,
)

__all__ = ["CALL_FORMAT", "TextCall", "format_call", "parse_tool_call", "tools_prompt"]

CALL_FORMAT = '<tool_call>\n{"name": "<tool name>", "arguments": {<arguments>}}\n</tool_call>'
"""The tool-call form taught to text-only models."""

_TAGGED = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_FENCED_SHELL = re.compile(r"```(?:bash|sh|shell)[ \t]*\n(.*?)(?:```|$)", re.DOTALL)
_OPEN_FENCE = re.compile(r"```\w*")


class TextCall(NamedTuple):
    """What `parse_tool_call` found in a text."""

    call: ToolCall | None
    """The first tool call, or None."""
    error: str
    """Why a tool call the text tried to make could not be read ('' when none was tried,
    or when calls before it were read)."""
    found: int
    """How many tool calls the text held."""
    calls: tuple[ToolCall, ...] = ()
    """Every call read, in order (``call`` is the first): those of the ``<tool_call>``
    blocks up to the first that cannot be read, or the one call of a fallback."""


def parse_tool_call(
    text: str, tool_names: Collection[str] = (), *, fallbacks: bool = True
) -> TextCall:
    """The first tool call written in a model's text.

    Args:
        text: the model's answer.
        tool_names: the tools the environment offers (enables the ```bash fallback
            when it holds ``bash``); names are not checked here, the environment does.
        fallbacks: also read bare JSON objects and fenced shell blocks; with False only
            ``<tool_call>`` blocks count.

    Returns:
        The call (or None), the reason a tagged call could not be read, and how many
        calls the text held.
    """
    blocks = [block.strip() for block in _TAGGED.findall(text)]
    if blocks:
        return _from_blocks(blocks)
    if not fallbacks:
        return TextCall(None, "", 0)
    found, problem = scan_json(text)
    objects = [obj for obj in found if _looks_like_call(obj)]
    if objects:
        call, error = _to_call(objects[0])
        return TextCall(call, error, len(objects), (call,) if call else ())
    if problem:
        return TextCall(None, _bad(problem), 0)
    if "bash" in tool_names:
        shells = [block.strip() for block in _FENCED_SHELL.findall(text) if block.strip()]
        if shells:
            call = ToolCall(name="bash", arguments={"command": shells[0]})
            return TextCall(call, "", 1, (call,))
    return TextCall(None, "", 0)


def _from_blocks(blocks: list[str]) -> TextCall:
    items: list[Any] = []
    for block in blocks:
        try:
            value = load_json(_unfenced(block), "the text in <tool_call>", _BLOCK, prefix=True)
        except ValueError as exc:
            if not items:
                return TextCall(None, _bad(str(exc)), 0)
            break
        items.extend(value if isinstance(value, list) else [value])
    if not items:
        return TextCall(None, _bad("the <tool_call> block holds an empty list"), 0)
    calls: list[ToolCall] = []
    for item in items:
        call, error = _to_call(item)
        if call is None:
            first = calls[0] if calls else None
            return TextCall(first, "" if calls else error, len(items), tuple(calls))
        calls.append(call)
    return TextCall(calls[0], "", len(items), tuple(calls))


_BLOCK = ARGUMENTS._replace(chars=ARGUMENTS.chars + 4096, depth=ARGUMENTS.depth + 3)
"""A ``<tool_call>`` block: a list of calls (one level), each a call object (one or two,
with ``function``) around its arguments, and the arguments' own bounds."""


def _unfenced(block: str) -> str:
    """A block without a Markdown fence around it (```json ... ```), in linear time."""
    if block.startswith("```"):
        opening = _OPEN_FENCE.match(block)
        block = block[opening.end() if opening else 3 :]
    if block.endswith("```"):
        block = block[:-3]
    return block.strip()


def _to_call(obj: Any) -> tuple[ToolCall | None, str]:
    if not isinstance(obj, dict):
        return None, _bad(f"a tool call must be a JSON object, not {type(obj).__name__}")
    inner = obj.get("function")
    fn: dict[str, Any] = inner if isinstance(inner, dict) else obj
    name = fn.get("name")
    args = fn.get("arguments", fn.get("parameters", {}))
    if not isinstance(name, str) or not name.strip():
        return None, _bad("the tool call has no 'name' string")
    try:
        check_name(name.strip())
        return ToolCall(name=name.strip(), arguments=decode_arguments(name, args)), ""
    except ValueError as exc:
        return None, _bad(f"the {exc}" if str(exc).startswith("arguments") else str(exc))


def _looks_like_call(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("name"), str)
        and ("arguments" in obj or "parameters" in obj)
    )


def _bad(problem: str) -> str:
    return f"Could not read your tool call: {problem}. Call a tool like this:\n{CALL_FORMAT}"


def format_call(name: str, arguments: dict[str, Any]) -> str:
    """A tool call written in the taught text form."""
    body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


def tools_prompt(tools: list[dict[str, Any]]) -> str:
    """The system-prompt section that lists the tools and teaches the call format.

    Args:
        tools: OpenAI tool schemas (``{"type": "function", "function": {...}}``).
    """
    fns = [t.get("function", t) for t in tools]
    lines = [json.dumps(fn, ensure_ascii=False) for fn in fns]
    return (
        "# Tools\n\nYou may call these tools (JSON schemas):\n<tools>\n"
        + "\n".join(lines)
        + "\n</tools>\n\nTo call a tool, write its name and its arguments as one JSON "
        "object between <tool_call> and </tool_call>, and nothing after it. "
        "For example:\n" + _example(fns)
    )


def _example(fns: list[dict[str, Any]]) -> str:
    """A concrete call of one of the tools (bash when offered)."""
    names = [fn.get("name") for fn in fns]
    if "bash" in names:
        return format_call("bash", {"command": "ls"})
    fn: dict[str, Any] = fns[0] if fns else {"name": "submit"}
    params = fn.get("parameters")
    required = params.get("required", []) if isinstance(params, dict) else []
    return format_call(str(fn.get("name")), {str(arg): "..." for arg in required})
