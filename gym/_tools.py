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
import re
from collections.abc import Callable, Iterator
from typing import Annotated, Any, Literal, TypeVar

import docstring_parser
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, create_model

__all__ = [
    "NulFree",
    "ToolCall",
    "ToolSpec",
    "decode_arguments",
    "json_objects",
    "parse_call",
    "tool",
    "tool_specs",
]

Kind = Literal["read", "write", "final"]
F = TypeVar("F", bound=Callable[..., Any])
_DECODER = json.JSONDecoder()
_SURROGATE = re.compile("[\ud800-\udfff]")


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
    """The arguments, already decoded from JSON."""
    id: str | None = None
    """The call id a model gave it, if any."""

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
    args_model: type[BaseModel]
    """The pydantic model that validates the arguments."""

    def openai_schema(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry: ``{"type": "function", "function": {...}}``."""
        schema: dict[str, Any] = json.loads(
            _schema_text(self.name, self.description, self.args_model)
        )
        return schema

    def validate_args(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validated arguments, or ValueError with a message a model can act on.

        Text that cannot be encoded (a lone surrogate) is refused here, for every tool.
        """
        if problem := unencodable(arguments):
            raise ValueError(f"invalid arguments for {self.name}: {problem}; send valid Unicode")
        try:
            model = self.args_model.model_validate(arguments, strict=True)
        except ValidationError as exc:
            problems = "; ".join(_describe(err) for err in exc.errors())
            raise ValueError(f"invalid arguments for {self.name}: {problems}") from None
        return model.model_dump()


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
    where = ".".join(str(p) for p in err["loc"]) or "arguments"
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

    Raises:
        ValueError: the action is not a tool call; the message says what was wrong.
    """
    if isinstance(action, ToolCall):
        return action
    if isinstance(action, str | bytes):
        try:
            action = json.loads(action)
        except json.JSONDecodeError as exc:
            raise ValueError(f"action is not JSON ({exc.msg}); send a tool call") from None
    if hasattr(action, "model_dump"):
        action = action.model_dump()
    if not isinstance(action, dict):
        raise ValueError(
            "a tool call must be an object with 'name' and 'arguments', "
            f"got {type(action).__name__}"
        )
    inner = action.get("function")
    fn: dict[str, Any] = inner if isinstance(inner, dict) else action
    name, args = fn.get("name"), fn.get("arguments", {})
    if not isinstance(name, str) or not name:
        raise ValueError("a tool call needs a 'name' string")
    call_id = action.get("id")
    return ToolCall(
        name=name,
        arguments=decode_arguments(name, args),
        id=call_id if isinstance(call_id, str) else None,
    )


def decode_arguments(name: str, args: Any) -> dict[str, Any]:
    """A call's arguments as a dict: JSON text decoded, empty text or None as ``{}``.

    Raises:
        ValueError: the text is not JSON, or the arguments are not a JSON object.
    """
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as exc:
            raise ValueError(f"arguments of {name} are not valid JSON ({exc.msg})") from None
    if args is None:
        return {}
    if not isinstance(args, dict):
        raise ValueError(f"arguments of {name} must be a JSON object, got {type(args).__name__}")
    return args


def json_objects(text: str) -> list[Any]:
    """Every top-level JSON value that decodes at some ``{`` of a model's text, in order."""
    found: list[Any] = []
    pos = text.find("{")
    while pos != -1:
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except json.JSONDecodeError:
            pos = text.find("{", pos + 1)
            continue
        found.append(value)
        pos = text.find("{", end)
    return found
