"""Tools declared as JSON schemas (the OpenAI function format), checked and validated.

A family (``ContainerEnv.tool_schemas``) or a task (``Task.tools``) may declare a tool as
data instead of a method::

    {"type": "function", "function": {"name": "get_weather", "description": "...",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                    "required": ["city"]}}}

or the bare ``{"name", "description", "parameters"}``. ``"x-boxgym-kind"`` (``read``,
``write`` or ``final``; ``write`` by default) marks what the tool does. `function_schema`
checks one and gives its canonical form; `SchemaTool` is its `ToolSpec`, validating
arguments with ``jsonschema``: strictly (an unknown argument, a missing required one or a
wrong JSON type is refused, as for a method's tool) or leniently (values coerced where the
change loses nothing, ``"3"`` -> ``3``; unknown arguments dropped with a note).

``jsonschema`` is imported on first use: ``import gym`` stays light.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import re
from typing import TYPE_CHECKING, Any, cast, get_args

from gym._core._tools import MAX_NAME, Kind, ToolSpec, check_name, json_problem, load_json, shown

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = ["KIND_KEY", "SchemaTool", "function_schema"]

KIND_KEY = "x-boxgym-kind"
"""The schema key that marks a schema tool's kind (read, write or final)."""
_FUNCTION_KEYS = ("name", "description", "parameters", "strict", KIND_KEY)
_EMPTY: dict[str, Any] = {"type": "object", "properties": {}}
_NUMBER = re.compile(r"-?(?:0|[1-9]\d{0,40})(?:\.\d{1,40})?(?:[eE][+-]?\d{1,3})?")
"""A JSON number, as text (bounded: no value it matches is out of a float's reach but
an exponent, which `_convert` checks)."""
_INTEGER = re.compile(r"-?(?:0|[1-9]\d{0,40})(?:\.0{1,40})?")
"""An integer as text, ``3`` or ``3.0`` (nothing after the point but zeros: no loss)."""
_SHOWN_ERRORS = 5


def function_schema(raw: Any) -> dict[str, Any]:
    """A tool schema checked and in its canonical form ``{"type": "function", ...}``.

    Args:
        raw: ``{"type": "function", "function": {...}}`` or the bare function object
            (``name``, ``description``, ``parameters``, optional ``x-boxgym-kind``).

    Raises:
        ValueError: what is wrong with it (no name, parameters that are not a JSON
            schema of an object, an unknown kind...).
    """
    if not isinstance(raw, dict):
        raise ValueError(f"a tool schema must be an object/table, not {type(raw).__name__}")
    fn = raw.get("function", raw)
    if not isinstance(fn, dict):
        raise ValueError("'function' of a tool schema must be an object/table")
    name = check_name(fn.get("name"))
    description = fn.get("description", "")
    if not isinstance(description, str):
        raise ValueError(f"tool {name!r}: 'description' must be a string")
    kind = fn.get(KIND_KEY, raw.get(KIND_KEY, "write"))
    if kind not in get_args(Kind):
        raise ValueError(f"tool {name!r}: {KIND_KEY} = {kind!r}; use 'read', 'write' or 'final'")
    params = fn.get("parameters", _EMPTY)
    _check_parameters(name, params)
    extra = sorted(set(fn) - set(_FUNCTION_KEYS))
    if extra:
        raise ValueError(
            f"tool {name!r}: unknown key(s) {extra}; a tool has {', '.join(_FUNCTION_KEYS)}"
        )
    out: dict[str, Any] = {k: fn[k] for k in _FUNCTION_KEYS if k in fn}
    out.update(name=name, description=description, parameters=copy.deepcopy(params))
    if KIND_KEY in fn or KIND_KEY in raw:
        out[KIND_KEY] = kind
    return {"type": "function", "function": out}


def _check_parameters(name: str, params: Any) -> None:
    if not isinstance(params, dict) or params.get("type", "object") != "object":
        raise ValueError(
            f"tool {name!r}: 'parameters' must be a JSON schema of an object "
            '({"type": "object", "properties": {...}})'
        )
    if problem := json_problem(params):
        raise ValueError(f"tool {name!r}: 'parameters' {problem}")
    if problem := _schema_problem(json.dumps(params, sort_keys=True)):
        raise ValueError(f"tool {name!r}: 'parameters{problem}")


@functools.lru_cache(maxsize=4096)
def _schema_problem(params_text: str) -> str:
    """What makes a parameters schema (as JSON text) invalid, or ''.

    Checked once per text: a benchmark's tasks repeat the same few hundred tools thousands
    of times.
    """
    from jsonschema import SchemaError
    from jsonschema.validators import validator_for

    params = json.loads(params_text)
    try:
        validator_for(params).check_schema(params)
    except SchemaError as exc:
        where = "".join(f"[{p!r}]" for p in exc.absolute_path)
        return f"{where}' is not a valid JSON schema: {_clip(exc.message)}"
    return ""


class SchemaTool(ToolSpec):
    """A tool declared as a JSON schema: its arguments validated by ``jsonschema``."""

    tool_schema: dict[str, Any]
    """The tool's canonical schema (`function_schema`), as the model is shown it (the
    ``x-boxgym-kind`` key left out)."""
    lenient: bool = False
    """Coerce values losslessly and drop unknown arguments (with a note) instead of
    refusing the call."""

    @classmethod
    def of(cls, raw: dict[str, Any], *, lenient: bool = False) -> SchemaTool:
        """The spec of a tool schema.

        Raises:
            ValueError: the schema is not a valid tool schema (see `function_schema`).
        """
        schema = function_schema(raw)
        fn = schema["function"]
        kind = cast(Kind, fn.pop(KIND_KEY, "write"))
        return cls(
            name=fn["name"],
            description=fn["description"],
            kind=kind,
            tool_schema=schema,
            lenient=lenient,
        )

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments."""
        params: dict[str, Any] = self.tool_schema["function"]["parameters"]
        return params

    def openai_schema(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry (a copy: callers may change it)."""
        return copy.deepcopy(self.tool_schema)

    def read_args(self, arguments: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """Validated (in lenient mode, coerced) arguments and the notes of what changed.

        Raises:
            ValueError: the arguments do not match the schema; the message says where.
        """
        self.check_text(arguments)
        notes: list[str] = []
        args = self._known(arguments, notes)
        if self.lenient:
            args = _coerced(args, self.parameters, "", notes)
        errors = sorted(_validator(_key(self.parameters)).iter_errors(args), key=_order)
        if errors:
            problems = "; ".join(_describe(err) for err in errors[:_SHOWN_ERRORS])
            more = len(errors) - _SHOWN_ERRORS
            tail = f" (and {more} more)" if more > 0 else ""
            raise ValueError(f"invalid arguments for {self.name}: {problems}{tail}")
        return _integers(args, self.parameters), notes

    def _known(self, arguments: dict[str, Any], notes: list[str]) -> dict[str, Any]:
        """The arguments the schema names: unknown ones refused, or dropped when lenient.

        A schema that allows more (``additionalProperties`` other than false, or
        ``patternProperties``) takes every argument.
        """
        params = self.parameters
        if params.get("additionalProperties", False) is not False or "patternProperties" in params:
            return dict(arguments)
        props = params.get("properties", {})
        unknown = [k for k in arguments if k not in props]
        if unknown and not self.lenient:
            names = ", ".join(shown(k, 40) for k in unknown[:_SHOWN_ERRORS])
            raise ValueError(
                f"invalid arguments for {self.name}: {names} is not an argument of this tool; "
                f"its arguments are: {', '.join(props) or 'none'}"
            )
        for key in unknown:
            notes.append(f"{shown(key, 40)} is not an argument of {self.name}; it was left out")
        return {k: v for k, v in arguments.items() if k in props}


def _key(params: dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True)


@functools.lru_cache(maxsize=1024)
def _validator(params_text: str) -> Validator:
    """A validator for a schema (one per distinct schema, kept)."""
    from jsonschema.validators import validator_for

    params = json.loads(params_text)
    validator: Validator = validator_for(params)(params)
    return validator


def _order(err: Any) -> tuple[str, str]:
    return (json.dumps([str(p) for p in err.absolute_path]), str(err.validator))


def _where(path: Any) -> str:
    parts = [f"[{p}]" if isinstance(p, int) else f".{p}" for p in path]
    return "".join(parts).lstrip(".")[:MAX_NAME]


def _describe(err: Any) -> str:
    """One validation error as a model can act on it (never a huge value quoted)."""
    where = _where(err.absolute_path)
    if err.validator == "required" and isinstance(err.instance, dict):
        missing = [r for r in err.validator_value if r not in err.instance]
        return "; ".join(f"'{_where([*err.absolute_path, m])}' is required" for m in missing)
    label = f"'{where}'" if where else "the arguments"
    if err.validator == "type":
        wanted = err.validator_value
        wanted = " or ".join(wanted) if isinstance(wanted, list) else wanted
        return f"{label}: expected {wanted}, got {_json_type(err.instance)}"
    if err.validator == "enum":
        return f"{label}: must be one of {_clip(json.dumps(err.validator_value))}"
    return f"{label}: {_clip(err.message)}"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


# -- lenient mode: lossless coercion -------------------------------------------------------


def _types(schema: dict[str, Any]) -> list[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    return [k for k in kind if isinstance(k, str)] if isinstance(kind, list) else []


def _coerced(value: Any, schema: Any, where: str, notes: list[str]) -> Any:
    """The value with each part converted to its schema's type where nothing is lost."""
    if not isinstance(schema, dict):
        return value
    types = _types(schema)
    if types and not any(_is(value, t) for t in types):
        for kind in types:
            ok, new = _convert(value, kind)
            if ok:
                shown_new = _clip(json.dumps(new))
                notes.append(f"'{where or 'arguments'}' was read as {kind} {shown_new}")
                value = new
                break
    props, items = schema.get("properties"), schema.get("items")
    if isinstance(value, dict) and isinstance(props, dict):
        return {
            k: _coerced(v, props.get(k), f"{where}.{k}" if where else k, notes)
            for k, v in value.items()
        }
    if isinstance(value, list) and isinstance(items, dict):
        return [_coerced(v, items, f"{where}[{i}]", notes) for i, v in enumerate(value)]
    return value


def _integers(value: Any, schema: Any) -> Any:
    """The value with each integral float an ``integer`` of its schema made an int.

    JSON Schema takes ``12446.0`` as an integer, and a tool's code then got a float: a
    tool that echoed it (``order 12446.0``) failed correct work whose results are compared
    as text (a red-team helper, BFCL).
    """
    if not isinstance(schema, dict):
        return value
    branch = _branch(value, schema)
    if branch is not None:
        value = _integers(value, branch)
    types = _types(schema)
    if isinstance(value, float) and "integer" in types and "number" not in types:
        return int(value) if value.is_integer() else value
    props, items = schema.get("properties"), schema.get("items")
    if isinstance(value, dict) and isinstance(props, dict):
        return {k: _integers(v, props.get(k)) for k, v in value.items()}
    if isinstance(value, list) and isinstance(items, dict):
        return [_integers(v, items) for v in value]
    return value


def _branch(value: Any, schema: dict[str, Any]) -> dict[str, Any] | None:
    """The ``anyOf``/``oneOf`` branch whose types `_integers` reads the value by, if any.

    The first branch the value matches, unless a matching branch takes any ``number``:
    then an integral float stays the float it may be meant as.
    """
    branches = [b for w in ("anyOf", "oneOf") for b in schema.get(w) or () if isinstance(b, dict)]
    fits = [b for b in branches if _validator(_key(b)).is_valid(value)]
    if not fits or (isinstance(value, float) and any("number" in _types(b) for b in fits)):
        return None
    return fits[0]


def _is(value: Any, kind: str) -> bool:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    checks = {
        "string": isinstance(value, str),
        "integer": number and float(value).is_integer(),
        "number": number,
        "boolean": isinstance(value, bool),
        "null": value is None,
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
    }
    return checks.get(kind, True)


def _convert(value: Any, kind: str) -> tuple[bool, Any]:
    """Whether the value converts to the JSON type without loss, and the converted value."""
    if kind == "string" and isinstance(value, int | float) and not isinstance(value, bool):
        return True, json.dumps(value)
    if not isinstance(value, str):
        return False, None
    text = value.strip()
    if kind == "integer" and _INTEGER.fullmatch(text):
        return True, int(text.split(".")[0])
    if kind == "number" and _NUMBER.fullmatch(text):
        number = json.loads(text)
        return math.isfinite(number), number
    if kind == "boolean" and text.lower() in ("true", "false"):
        return True, text.lower() == "true"
    if kind == "null" and text == "null":
        return True, None
    if kind in ("array", "object") and text[:1] in "[{":
        try:
            parsed = load_json(text, "the value")
        except ValueError:
            return False, None
        return _is(parsed, kind), parsed
    return False, None
