"""The importer of tool-API datasets: records with tools, user turns, gold calls, initial state.

Each record becomes a task folder of a tool-API family (``environments.toolapi``):

- ``task.toml``: ``id``, ``split``, ``prompt`` (the first user message), ``turns`` (the
  messages that follow), ``lenient``, ``[backend]`` (``classes``, ``setup``,
  ``setup_kwargs``) and ``[tags]``;
- ``tools.json``: the task's tools, OpenAI function schemas;
- ``state.json``: the backend's initial state (class name -> its state);
- ``hidden/gold.json``: the gold calls, one list per user turn.

A record is checked as it is written: one list of gold calls per user turn, each gold
call names one of the record's tools and its arguments satisfy that tool's schema
(jsonschema), each class is ``module:Class``; the task is then read back. A bad record
is reported by number, with the field and value, and left out.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gym._core._errors import ConfigError
from gym._core._models import DEFAULT_SPLITS, SplitUse, _load_task
from gym._core._schemas import function_schema
from gym._core._tools import ToolCall
from gym._datasets._dataset import MappingFile, SplitRule, _field, _fill, folder_name, read_records
from gym._datasets._importer import ImportResult

__all__ = ["ToolAPIMapping", "ToolAPIRecord", "import_toolapi", "toolapi_files"]

_CLASS = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class ToolAPIRecord(BaseModel):
    """One tool-API task, as the importer writes it."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    """Task id (unique in the family)."""
    turns: list[str] = Field(min_length=1)
    """The user's messages, in order: the first is the prompt."""
    tools: list[dict[str, Any]]
    """The task's tools: OpenAI function schemas (or the bare ``{name, parameters}``)."""
    gold: list[list[ToolCall]]
    """The gold calls of each user turn."""
    classes: list[str] = Field(min_length=1)
    """The backend classes, ``module:Class``, in order."""
    state: dict[str, Any] = Field(default_factory=dict)
    """The backend's initial state: class name -> its state."""
    split: str = "train"
    """Split name (one the family declares)."""
    tags: dict[str, str] = Field(default_factory=dict)
    """Slice tags."""
    setup: str = "_load_scenario"
    """The method each backend instance receives its initial state with."""
    setup_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments of that method besides the state."""
    lenient: bool = False
    """Lenient argument validation of the task's tools."""


class ToolAPIMapping(MappingFile):
    """Which record fields hold a tool-API task (a ``kind = "toolapi"`` mapping file)."""

    model_config = ConfigDict(extra="forbid")
    mapping_kind: ClassVar[str | None] = "toolapi"
    docs_section: ClassVar[str] = "A tool-API environment from a dataset"

    kind: str = "toolapi"
    family: str
    """The family (seeds/<family>/)."""
    id: str = "{id}"
    """Id template (Python format syntax over the record)."""
    turns: str = "turns"
    """Field: the list of user messages (the first is the prompt)."""
    tools: str | list[dict[str, Any]] = "tools"
    """Field holding the list of tool schemas, or the list itself (the same for every
    record: ``[[tools]]`` tables in a mapping file)."""
    gold: str = "gold"
    """Field: per user turn, a list of ``{"name", "arguments"}`` calls."""
    classes: str | list[str] = "classes"
    """Field holding the backend classes, or the list itself (``["module:Class"]``)."""
    state: str = "state"
    """Field: the backend's initial state (absent: none)."""
    setup: str = "_load_scenario"
    setup_kwargs: dict[str, Any] = Field(default_factory=dict)
    lenient: bool = False
    split: SplitRule = Field(default_factory=SplitRule)
    splits: dict[str, SplitUse] = Field(default_factory=lambda: dict(DEFAULT_SPLITS))
    """The family's splits and their roles."""
    tags: dict[str, str] = Field(default_factory=dict)
    """Tag templates."""

    def record(self, raw: Mapping[str, Any]) -> ToolAPIRecord:
        """The task of one dataset record.

        Raises:
            ConfigError: a field is missing or malformed (the message names it).
        """
        classes = _given(self.classes, raw, "classes")
        try:
            return ToolAPIRecord(
                id=_fill("id", self.id, raw),
                turns=_field(raw, self.turns, "turns"),
                tools=_given(self.tools, raw, "tools"),
                gold=_field(raw, self.gold, "gold"),
                classes=classes,
                state=_field(raw, self.state, "state") if self.state in raw else {},
                split=self.split.split_of(raw),
                tags={k: _fill(f"tags.{k}", v, raw) for k, v in self.tags.items()},
                setup=self.setup,
                setup_kwargs=self.setup_kwargs,
                lenient=self.lenient,
            )
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise ConfigError(f"{where} = {str(err.get('input'))[:120]!r}: {err['msg']}") from None


def _given(value: str | list[Any], raw: Mapping[str, Any], key: str) -> Any:
    """A mapping key's list: given in the mapping itself, or read from the record's field."""
    return value if isinstance(value, list) else _field(raw, value, key)


def _schema(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    inner = tool.get("function", tool)
    return inner if isinstance(inner, Mapping) else {}


def check_record(record: ToolAPIRecord, splits: Mapping[str, SplitUse]) -> None:
    """Refuse a record whose parts do not fit together.

    Raises:
        ConfigError: the split is not declared, a class is not ``module:Class``, the gold
            has not one list per turn, or a gold call is not a valid call of a tool.
    """
    import jsonschema

    if record.split not in splits:
        raise ConfigError(f"split = {record.split!r} is not one of {', '.join(splits)}")
    for spec in record.classes:
        if not _CLASS.match(spec):
            raise ConfigError(f"classes: {spec!r} is not 'module:Class'")
    if len(record.gold) != len(record.turns):
        raise ConfigError(
            f"gold: {len(record.gold)} lists of calls for {len(record.turns)} user turns "
            "(one list per turn, empty where the turn needs no call)"
        )
    for i, tool in enumerate(record.tools):
        try:
            function_schema(tool)
        except ValueError as exc:
            raise ConfigError(f"tools[{i}]: {exc}") from None
    tools = {str(_schema(t).get("name", "")): _schema(t) for t in record.tools}
    if "" in tools or len(tools) != len(record.tools):
        raise ConfigError("tools: every tool needs a name, and names must be unique")
    for turn, calls in enumerate(record.gold):
        for call in calls:
            schema = tools.get(call.name)
            if schema is None:
                raise ConfigError(f"gold turn {turn + 1}: {call.name!r} is not one of the tools")
            try:
                jsonschema.validate(call.arguments, schema.get("parameters", {"type": "object"}))
            except jsonschema.ValidationError as exc:
                raise ConfigError(
                    f"gold turn {turn + 1}: {call.name}{json.dumps(call.arguments)[:200]} does "
                    f"not fit the tool's schema: {exc.message}"
                ) from None


def _toml_value(value: Any) -> str:
    """A TOML value (strings, numbers, booleans, lists and tables of them)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
        )
    raise ConfigError(f"{value!r} cannot be written to task.toml")


def toolapi_files(record: ToolAPIRecord) -> dict[str, bytes]:
    """The files of a record's task folder (relative path -> bytes)."""
    lines = [
        f"id = {_toml_value(record.id)}",
        f"split = {_toml_value(record.split)}",
        f"prompt = {_toml_value(record.turns[0])}",
        f"turns = {_toml_value(record.turns[1:])}",
    ]
    if record.lenient:
        lines.append("lenient = true")
    lines += ["", "[backend]", f"classes = {_toml_value(record.classes)}"]
    lines.append(f"setup = {_toml_value(record.setup)}")
    if record.setup_kwargs:
        lines.append(f"setup_kwargs = {_toml_value(record.setup_kwargs)}")
    if record.tags:
        lines += [
            "",
            "[tags]",
            *(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in record.tags.items()),
        ]
    gold = {
        "turns": [[c.model_dump(include={"name", "arguments"}) for c in t] for t in record.gold]
    }
    return {
        "task.toml": ("\n".join(lines) + "\n").encode(),
        "tools.json": _json_lines(record.tools),
        "state.json": _json(record.state),
        "hidden/gold.json": _json(gold),
    }


def _json_lines(items: list[Any]) -> bytes:
    """A JSON list with one compact item per line (short files, one-line diffs)."""
    body = ",\n".join(json.dumps(item, ensure_ascii=False) for item in items)
    return f"[\n{body}\n]\n".encode() if items else b"[]\n"


def _json(value: Any) -> bytes:
    return (json.dumps(value, indent=1, ensure_ascii=False, sort_keys=False) + "\n").encode()


def import_toolapi(
    source: Path | Iterable[Mapping[str, Any]],
    mapping: ToolAPIMapping,
    seeds: Path,
    *,
    fmt: str | None = None,
    limit: int | None = None,
) -> ImportResult:
    """Write one task folder per record under ``seeds/<family>/``.

    Args:
        source: a JSONL, JSON or CSV file (`read_records`), or the records themselves.
        mapping: which fields hold what.
        seeds: the seeds folder.
        fmt: the file's format (by default from its suffix).
        limit: only the first N records.
    """
    records = read_records(source, fmt) if isinstance(source, Path) else list(source)
    folder = seeds / mapping.family
    result = ImportResult(family=mapping.family, folder=str(folder), layout="folders")
    seen: set[str] = set()
    for number, raw in enumerate(records[:limit] if limit else records, start=1):
        try:
            record = mapping.record(raw)
            if record.id in seen:
                raise ConfigError(f"id = {record.id!r} is the id of an earlier record")
            check_record(record, mapping.splits)
            _write(folder / folder_name(record.id), toolapi_files(record), mapping)
        except ConfigError as exc:
            result.problems.append(f"record {number}: {exc}")
            continue
        seen.add(record.id)
        result.written.append(record.id)
        result.splits[record.split] = result.splits.get(record.split, 0) + 1
    return result


def _write(target: Path, files: Mapping[str, bytes], mapping: ToolAPIMapping) -> None:
    """Write a task folder (replacing an older one), then read its task.toml back."""
    if target.exists():
        shutil.rmtree(target)
    for rel, data in files.items():
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        (target / rel).write_bytes(data)
    try:
        _load_task(mapping.family, target, mapping.splits)
    except ConfigError:
        shutil.rmtree(target)
        raise
