"""Tools an agent calls: declared as typed methods, exposed as JSON schemas, validated.

A tool is a method of an environment decorated with `tool`. Its signature gives the
argument schema (through a pydantic model) and its Google-style docstring the
descriptions; ``kind`` marks it read, write or final (``submit``)::

    class MyEnv(gym.ContainerEnv):
        @gym.tool(kind="read")
        def read_file(self, path: str) -> str:
            \"\"\"Read a file of the workspace.

Args:
                path: path relative to the workspace.
            \"\"\"
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import re
from collections.abc import Callable, Iterator
from typing import Annotated, Any, Literal, NamedTuple, TypeVar

import docstring_parser
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    field_validator,
)

__all__ = [
    "ARGUMENTS",
    "MAX_NAME",
    "Bounds",
    "NulFree",
    "ToolCall",
    "ToolSpec",
    "call_name",
    "check_name",
    "decode_arguments",
    "json_objects",
    "json_problem",
    "load_json",
    "parse_call",
    "recorded",
    "scan_json",
    "shown",
    "tool",
    "tool_specs",
]

Kind = Literal["read", "write", "final"]
F = TypeVar("F", bound=Callable[..., Any])
_SURROGATE = re.compile("[\ud800-\udfff]")


# -- bounded JSON: every parse of a model's (or any caller's) text --------------------------


class Bounds(NamedTuple):
    """How much JSON a parse takes: nesting depth, values, characters.

    Checked before the parse (the text's size, and its brackets' depth) and after it
    (the decoded value, walked without recursion), so that nothing deeper or larger
    ever reaches the decoder, a validator, a serializer or the store.
    """

    depth: int = 32
    """Objects and arrays nested in one another, at most."""
    items: int = 100_000
    """Values (objects, arrays, strings, numbers...) in all, at most."""
    chars: int = 8 << 20
    """Characters of the JSON text, and of all its strings together, at most."""


ARGUMENTS = Bounds()
"""What a tool call may hold: far more than any tool takes (a file's content is at most
a few MiB), far less than what would crash or stall a parse."""
MAX_NAME = 128
"""Characters of a tool name, at most (a call naming a longer one is refused)."""
_RECORD = Bounds(depth=32, items=10_000, chars=64 << 10)
"""What the trace keeps of a rejected action (`recorded`)."""
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number; send a finite number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is out of range for a number; send a finite number")
    return value


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite)
"""Strict JSON: NaN, Infinity and numbers that overflow to them are refused."""


def shown(text: str, limit: int = 80) -> str:
    """A piece of untrusted text as a message may quote it: short, quoted, valid Unicode."""
    cut = text if len(text) <= limit else text[:limit] + "..."
    return repr(cut)


def _over_deep(text: str, depth: int) -> bool:
    """Whether the text's brackets nest deeper than ``depth`` (its strings left out).

    Linear, no recursion: each pass drops the innermost pairs (a level or two); brackets
    that do not match stop it (the decoder then says where). A text that passes nests at
    most ``2 * depth`` levels, so its decoding stays far from any recursion limit.
    """
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    for _ in range(depth):
        if not brackets:
            return False
        shorter = brackets.replace("[]", "").replace("{}", "")
        if shorter == brackets:
            return False
        brackets = shorter
    return bool(brackets)


def _text_problem(text: str, bounds: Bounds) -> str | None:
    """What keeps a JSON text from being parsed at all: its size or its depth."""
    if len(text) > bounds.chars:
        return f"is {len(text)} characters long; the most read is {bounds.chars}"
    if _over_deep(text, bounds.depth):
        return f"nests deeper than {bounds.depth} levels"
    return None


def load_json(
    text: str | bytes | bytearray,
    what: str,
    bounds: Bounds = ARGUMENTS,
    *,
    check: bool = True,
    prefix: bool = False,
) -> Any:
    """Decode JSON text from outside, bounded and total.

    Args:
        text: the text (bytes must be UTF-8).
        what: what the text is, for the message (``"arguments of bash"``).
        bounds: the most it may hold.
        check: also walk the decoded value (exact depth, values, string sizes); without
            it the size and the brackets' depth are still bounded before the parse.
        prefix: the value may be followed by other text (a model's words after its call).

    Raises:
        ValueError: the only error: the text is too large, too deep, not JSON, or holds
            a non-finite number; the message says which.
    """
    if isinstance(text, bytes | bytearray):
        if len(text) > bounds.chars * 4:
            raise ValueError(f"{what} is {len(text)} bytes long; the most read is {bounds.chars}")
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{what} is not UTF-8 text") from None
    if problem := _text_problem(text, bounds):
        raise ValueError(f"{what} {problem}")
    try:
        value, end = _DECODER.raw_decode(text, len(text) - len(text.lstrip()))
    except RecursionError:
        raise ValueError(f"{what} nests deeper than {bounds.depth} levels") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what}: not JSON ({exc.msg} at character {exc.pos})") from None
    except ValueError as exc:  # a constant, an overflowing number, an integer too long
        raise ValueError(f"{what}: not JSON ({str(exc)[:120]})") from None
    if not prefix and text[end:].strip():
        raise ValueError(f"{what}: not JSON (more text after the value at character {end})")
    if check and (problem := json_problem(value, bounds)):
        raise ValueError(f"{what}: {problem}")
    return value


def json_problem(value: Any, bounds: Bounds = ARGUMENTS, where: str = "") -> str | None:
    """Why a decoded value is not plain bounded JSON, or None when it is.

    Walked without recursion, and never further than the bounds: objects with string
    keys, arrays (lists or tuples), strings, finite numbers, booleans and null, nested
    at most ``bounds.depth`` levels, ``bounds.items`` values and ``bounds.chars``
    characters of strings in all. A value that holds itself ends at the depth bound.
    """
    stack: list[tuple[Any, int, str]] = [(value, 0, where)]
    items = chars = 0
    while stack:
        item, depth, at = stack.pop()
        items += 1
        if items > bounds.items:
            return f"holds more than {bounds.items} values"
        if isinstance(item, str):
            chars += len(item)
        elif isinstance(item, bool) or item is None or isinstance(item, int):
            continue
        elif isinstance(item, float):
            if not math.isfinite(item):
                return f"{_at(at)}holds {item}, which is not a JSON number"
        elif isinstance(item, dict | list | tuple):
            if depth >= bounds.depth:
                return f"nests deeper than {bounds.depth} levels"
            if isinstance(item, dict):
                for key, inner in item.items():
                    if not isinstance(key, str):
                        return f"{_at(at)}has a key that is not a string ({type(key).__name__})"
                    chars += len(key)
                    stack.append((inner, depth + 1, _path(at, f".{key}" if at else key)))
            else:
                stack.extend(
                    (inner, depth + 1, _path(at, f"[{i}]")) for i, inner in enumerate(item)
                )
        else:
            return f"{_at(at)}holds a {type(item).__name__}, which is not a JSON value"
        if chars > bounds.chars:
            return f"holds more than {bounds.chars} characters of text"
    return None


def _at(where: str) -> str:
    return f"{shown(where)} " if where else ""


def _path(at: str, step: str) -> str:
    """Where a value is, cut short: building it costs the same for any key or depth."""
    return at + step[:MAX_NAME] if len(at) < MAX_NAME else at


def recorded(action: Any) -> Any:
    """A rejected action as a trace keeps it: bounded, JSON-ready, valid Unicode.

    Text is kept as text (its first 64 KiB); a small plain value as itself; anything
    else (too deep, too large, not JSON, holding a lone surrogate) as a note of what it
    was, never a structure that could fail to serialize or be stored.
    """
    if isinstance(action, bytes | bytearray):
        action = bytes(action[: _RECORD.chars * 4]).decode("utf-8", "replace")
    if isinstance(action, str):
        return _clipped(action.encode("utf-8", "backslashreplace").decode(), _RECORD.chars)
    if problem := json_problem(action, _RECORD):
        return f"<a {type(action).__name__} not kept: it {problem}>"
    text = json.dumps(action)  # ASCII: a lone surrogate is spelled as an escape here
    if len(text) > _RECORD.chars:
        return _clipped(text, _RECORD.chars)
    value = json.loads(text)  # plain: tuples are lists now, and walked below
    return text if any(_SURROGATE.search(t) for _, t in _strings(value, "")) else value


def _clipped(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"[... {len(text) - limit} characters not kept]"


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError(
            f"holds a NUL character at position {value.index(chr(0))}; "
            "a path or a command cannot contain NUL"
        )
    return value


NulFree = Annotated[str, AfterValidator(_no_nul)]
"""A tool argument that a NUL character would silently cut (a path, a command): refused."""


def unencodable(arguments: dict[str, Any]) -> str | None:
    """Where a lone surrogate hides in decoded arguments (no UTF-8 encoding has one).

    JSON text may spell one (a backslash-u escape of U+D800 to U+DFFF); it decodes to a str
    that cannot be written anywhere: a call holding one is refused, never a crashed step.
    """
    for where, text in _strings(arguments, ""):
        if found := _SURROGATE.search(text):
            code = f"U+{ord(found.group()):04X}"
            name = where or "arguments"
            return f"'{name}' holds an unpaired surrogate ({code}) at {found.start()}"
    return None


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    """Every str in a decoded JSON value (keys too), with where it is."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for key, item in value.items():
            name = f"{where}.{key}" if where else str(key)
            yield name.encode("utf-8", "backslashreplace").decode(), key
            yield from _strings(item, name.encode("utf-8", "backslashreplace").decode())
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{where}[{i}]")


class ToolCall(BaseModel):
    """An OpenAI-style tool call: a name and arguments (a dict, or a JSON string)."""

    model_config = ConfigDict(frozen=True)

    name: str
    """The tool's name."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The arguments, already decoded from JSON: plain JSON within `ARGUMENTS` (a call
    deeper or larger cannot be made, so none is ever stored, sent or shown)."""
    id: str | None = None
    """The call id a model gave it, if any."""

    @field_validator("arguments")
    @classmethod
    def _bounded(cls, value: dict[str, Any]) -> dict[str, Any]:
        if problem := json_problem(value, ARGUMENTS):
            raise ValueError(f"the arguments {problem}")
        return value

    def wire(self, arguments: str | None = None) -> dict[str, Any]:
        """The call in the OpenAI wire form, arguments as JSON text.

        Args:
            arguments: the model's own argument text, kept as it was unless blank.
        """
        args = arguments if arguments and arguments.strip() else json.dumps(self.arguments)
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": args},
        }


class ToolSpec(BaseModel):
    """A tool as the model sees it, plus what boxgym needs to validate and grade it."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    """Tool name."""
    description: str
    """What the tool does (first paragraph of the method's docstring)."""
    kind: Kind
    """read (no side effect), write (changes state) or final (ends the episode)."""
    args_model: type[BaseModel] | None = None
    """The pydantic model that validates the arguments of a method's tool (None for a
    tool declared as a JSON schema: `gym._core._schemas.SchemaTool`)."""

    def openai_schema(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry: ``{"type": "function", "function": {...}}``."""
        schema: dict[str, Any] = json.loads(
            _schema_text(self.name, self.description, self._model())
        )
        return schema

    def validate_args(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validated arguments, or ValueError with a message a model can act on.

        Text that cannot be encoded (a lone surrogate) is refused here, for every tool.
        """
        return self.read_args(arguments)[0]

    def read_args(self, arguments: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """Validated arguments and notes of what validation changed (a method's: none).

        Raises:
            ValueError: the arguments do not fit the tool; the message says how.
        """
        self.check_text(arguments)
        try:
            model = self._model().model_validate(arguments, strict=True)
        except ValidationError as exc:
            problems = "; ".join(_describe(err) for err in exc.errors())
            raise ValueError(f"invalid arguments for {self.name}: {problems}") from None
        return model.model_dump(), []

    def check_text(self, arguments: dict[str, Any]) -> None:
        """Refuse arguments holding text no encoding can write (a lone surrogate).

        Raises:
            ValueError: where the surrogate is.
        """
        if problem := unencodable(arguments):
            raise ValueError(f"invalid arguments for {self.name}: {problem}; send valid Unicode")

    def _model(self) -> type[BaseModel]:
        if self.args_model is None:
            raise TypeError(f"tool {self.name!r} has no argument model")
        return self.args_model


@functools.lru_cache(maxsize=1024)
def _schema_text(name: str, description: str, args_model: type[BaseModel]) -> str:
    """The tool's schema as JSON text (computed once per tool)."""
    params = args_model.model_json_schema()
    params.pop("title", None)
    for prop in params.get("properties", {}).values():
        prop.pop("title", None)
    params.setdefault("properties", {})
    schema = {"name": name, "description": description, "parameters": params}
    return json.dumps({"type": "function", "function": schema})


def _describe(err: Any) -> str:
    where = ".".join(str(p) for p in err["loc"])[:MAX_NAME] or "arguments"
    if err["type"] == "missing":
        return f"'{where}' is required"
    if err["type"] == "extra_forbidden":
        return f"'{where}' is not an argument of this tool"
    return f"'{where}': {err['msg'].lower()}"


def _doc_parts(func: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The summary paragraph and the ``Args:`` descriptions of a Google docstring.

    Any consistent indentation is read (docstring_parser); a docstring it cannot parse
    gives the summary alone, with no argument descriptions.
    """
    doc = inspect.getdoc(func) or ""
    summary = doc.split("\n\n", 1)[0].replace("\n", " ").strip()
    try:
        params = docstring_parser.parse(doc, docstring_parser.DocstringStyle.GOOGLE).params
    except docstring_parser.ParseError:
        return summary, {}
    args = [p for p in params if p.args[0] == "param"]  # not Attributes
    return summary, {p.arg_name: " ".join(_lines(p.description)) for p in args}


def _lines(text: str | None) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def tool(*, kind: Kind = "write", name: str | None = None) -> Callable[[F], F]:
    """Mark an environment method as a tool the agent can call.

    Args:
        kind: ``read`` (no side effects), ``write`` (changes state) or ``final``.
        name: the tool's name (the method's name by default).
    """

    def mark(func: F) -> F:
        summary, docs = _doc_parts(func)
        fields: dict[str, Any] = {}
        hints = inspect.get_annotations(func, eval_str=True)
        for pname, param in list(inspect.signature(func).parameters.items())[1:]:
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[pname] = (hints.get(pname, str), Field(default, description=docs.get(pname)))
        tool_name = name or func.__name__
        model = create_model(f"{tool_name}_args", __config__=ConfigDict(extra="forbid"), **fields)
        func.__boxgym_tool__ = ToolSpec(  # type: ignore[attr-defined]
            name=tool_name, description=summary, kind=kind, args_model=model
        )
        return func

    return mark


def tool_specs(obj: object) -> dict[str, tuple[ToolSpec, Callable[..., Any]]]:
    """The tools of an environment instance: name -> (spec, bound method)."""
    found: dict[str, tuple[ToolSpec, Callable[..., Any]]] = {}
    for attr in dir(type(obj)):
        func = getattr(type(obj), attr, None)
        spec = getattr(func, "__boxgym_tool__", None)
        if isinstance(spec, ToolSpec):
            found[spec.name] = (spec, getattr(obj, attr))
    return dict(sorted(found.items()))


def parse_call(action: Any) -> ToolCall:
    """Turn an action (dict, ToolCall, or JSON text of one) into a `ToolCall`.

    Total and bounded: text is measured before it is parsed and every decoded value is
    walked within `ARGUMENTS` (depth, values, characters), so an action nested 100,000
    levels deep or holding NaN is refused like any malformed one.

    Raises:
        ValueError: the action is not a tool call; the message says what was wrong.
    """
    if isinstance(action, ToolCall):
        check_name(action.name)
        if problem := json_problem(action.arguments, ARGUMENTS):
            raise ValueError(f"arguments of {shown(action.name)}: {problem}")
        return action
    action, fn = _call_object(action)
    name, args = check_name(fn.get("name")), fn.get("arguments", {})
    call_id = action.get("id")
    return ToolCall(
        name=name,
        arguments=decode_arguments(name, args),
        id=call_id if isinstance(call_id, str) and len(call_id) <= MAX_NAME * 2 else None,
    )


def _call_object(action: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The action as an object, and the object holding its name and arguments.

    That is OpenAI's ``{"function": {...}}`` when the action has it, else the action.

    Raises:
        ValueError: the action is not an object (nor the JSON text of one).
    """
    if isinstance(action, str | bytes | bytearray):
        action = load_json(action, "the action", _ACTION, check=False)
    if hasattr(action, "model_dump"):
        try:
            action = action.model_dump()
        except (ValueError, RecursionError):
            raise ValueError("the action could not be read as a tool call") from None
    if not isinstance(action, dict):
        raise ValueError(
            "a tool call must be an object with 'name' and 'arguments', "
            f"got {type(action).__name__}"
        )
    inner = action.get("function")
    return action, inner if isinstance(inner, dict) else action


def call_name(action: Any) -> str:
    """The tool an action calls, read as `parse_call` reads it ('' when it names none).

    Whatever is wrong with its arguments: the name is read all the same.
    """
    try:
        if isinstance(action, ToolCall):
            return check_name(action.name)
        return check_name(_call_object(action)[1].get("name"))
    except (ValueError, RecursionError):
        return ""


_ACTION = ARGUMENTS._replace(chars=ARGUMENTS.chars + 4096, depth=ARGUMENTS.depth + 2)
"""A whole call as text: its arguments' bounds, plus the call's own object around them."""


def check_name(name: Any) -> str:
    """The tool name a call gives, unless no tool could have it.

    Not a string, empty, over `MAX_NAME` characters or not valid text: refused.

    Raises:
        ValueError: what is wrong with it.
    """
    if not isinstance(name, str) or not name:
        raise ValueError("a tool call needs a 'name' string")
    if len(name) > MAX_NAME:
        raise ValueError(f"a tool name is at most {MAX_NAME} characters; got {len(name)}")
    if _SURROGATE.search(name) or "\x00" in name:
        raise ValueError(f"the tool name {shown(name)} is not valid text; name one of the tools")
    return name


def decode_arguments(name: str, args: Any) -> dict[str, Any]:
    """A call's arguments as a dict: JSON text decoded, empty text or None as ``{}``.

    Bounded and total (see `load_json` and `json_problem`): only `ValueError` leaves it.

    Raises:
        ValueError: the text is not JSON, the arguments are not a JSON object, or they
            are deeper or larger than `ARGUMENTS` allows.
    """
    what = f"arguments of {shown(name)}"
    if isinstance(args, str):
        args = load_json(args, what) if args.strip() else {}
    elif args is not None and (problem := json_problem(args, ARGUMENTS)):
        raise ValueError(f"{what}: {problem}")
    if args is None:
        return {}
    if not isinstance(args, dict):
        raise ValueError(f"{what} must be a JSON object, got {type(args).__name__}")
    return args


def json_objects(text: str) -> list[Any]:
    """Every top-level JSON value that decodes at some ``{`` of a model's text, in order.

    Total and bounded (see `scan_json`): values too deep or too large are left out.
    """
    return scan_json(text)[0]


def scan_json(text: str, bounds: Bounds = ARGUMENTS) -> tuple[list[Any], str]:
    """The JSON objects found at the ``{`` of a text, and why the scan stopped early ('').

    Bounded whatever the text: only a ``{`` that can open an object (``{"`` or ``{}``)
    is tried; at most `_TRIES` tries may fail and `_TRIES` objects be found; the work
    of all tries together is capped (a failure costs up to where it failed: the
    decoder's error counts the lines before it); a value nested past the decoder's
    reach ends the scan; each value found is checked against ``bounds`` (those that
    break them are left out, and said).
    """
    found: list[Any] = []
    budget, failures, problem = 4 * len(text) + (1 << 20), 0, ""
    match = _OBJECT_START.search(text)
    while match is not None:
        pos = match.start()
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except RecursionError:
            return found, f"a JSON value nests deeper than {bounds.depth} levels"
        except ValueError as exc:  # its message counted the lines up to where it failed
            failures += 1
            budget -= exc.pos if isinstance(exc, json.JSONDecodeError) else len(text)
            if failures > _TRIES or budget < 0:
                return found, problem or "the text holds too many unfinished JSON objects to read"
            match = _OBJECT_START.search(text, pos + 1)
            continue
        budget -= end - pos
        if why := json_problem(value, bounds):
            problem = f"a JSON value {why}"
        else:
            found.append(value)
        if budget < 0 or len(found) >= _TRIES:
            return found, problem or "the text holds too much JSON to read"
        match = _OBJECT_START.search(text, end)
    return found, problem


_OBJECT_START = re.compile(r'\{(?=\s*["}])')
"""Where a JSON object can begin: a brace before a key's quote or its own end."""
_TRIES = 1000
"""Failed tries of a scan, and objects it finds, at most (a model's prose and code
hold some braces; a call is among the first objects)."""
