"""Datasets into tasks: the field mapping, dataset readers, and the files of one task.

A dataset record (a JSON object, a CSV row, a Hugging Face row) becomes a function
task of the ``calls`` kind (or ``pytest``) through a `DatasetMapping`: templates for
the id and prompt, the fields holding the reference solution, the checks and their
setup code, a rule for the split, and tags. `ImportedTask` is the result for one
record (a callable may produce it instead of a mapping); `seed_files` turns it into
the files of a seed task folder; `problems` says what is wrong with one, field by field.
"""

from __future__ import annotations

import ast
import csv
import functools
import io
import json
import re
import tokenize
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gym._core._errors import ConfigError
from gym._core._models import DEFAULT_SPLITS, SplitUse
from gym._datasets._floats import close_source, tolerant
from gym._grading._ast import parse_python as _parse_python

__all__ = [
    "MappingFile",
    "GENERATOR",
    "Correction",
    "DatasetMapping",
    "ImportedTask",
    "Mapper",
    "SplitRule",
    "TaskFormat",
    "entry_of",
    "folder_name",
    "problems",
    "read_records",
    "seed_files",
]

GENERATOR = "boxgym-import/1"
"""Version of the files `seed_files` writes; an index records it."""
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class SplitRule(BaseModel):
    """How a record's split is found: a field, a constant, or id ranges of a field."""

    model_config = ConfigDict(extra="forbid")

    field: str = ""
    """Record field holding the split name, or (with `ranges`) an integer to look up."""
    value: str = ""
    """The split of every record (when no field is given)."""
    ranges: dict[str, str] = Field(default_factory=dict)
    """split -> integer ranges of `field`, e.g. ``{"test": "11-510", "prompt": "1-10"}``."""

    def split_of(self, record: Mapping[str, Any]) -> str:
        """The split of one record.

        Raises:
            ConfigError: the field is missing, or the value falls in no range.
        """
        if not self.field:
            return self.value or "train"
        value = _field(record, self.field, "split.field")
        if not self.ranges:
            return str(value)
        number = int(value)
        for split, spec in self.ranges.items():
            if any(lo <= number <= hi for lo, hi in _ranges(spec)):
                return split
        raise ConfigError(f"split: {self.field} = {value!r} falls in no range of {self.ranges}")


def _ranges(spec: str) -> Iterator[tuple[int, int]]:
    for part in spec.replace(" ", "").split(","):
        lo, _, hi = part.partition("-")
        yield int(lo), int(hi or lo)


class MappingFile(BaseModel):
    """A mapping file's contents: read from TOML or plain data, every wrong key named.

    Each importer's mapping derives from it and names its `kind` (None: any) and the
    section of docs/authoring.md that documents it.
    """

    mapping_kind: ClassVar[str | None] = None
    """The ``kind`` key the file must hold (None: not checked)."""
    docs_section: ClassVar[str] = "Importing a dataset"
    """The section of docs/authoring.md an error points at."""

    @classmethod
    def from_toml(cls, path: Path) -> Self:
        """Read a mapping file.

        Raises:
            ConfigError: unreadable, or a key is wrong (named with its value).
        """
        import tomllib

        try:
            data = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: cannot read the mapping: {exc}") from exc
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "mapping") -> Self:
        """A mapping from plain data (a parsed TOML file, command-line options).

        Raises:
            ConfigError: a key is missing, unknown or of the wrong type, or the file is of
                another kind (named, with the value).
        """
        try:
            mapping = cls.model_validate(dict(data))
        except ValidationError as exc:
            raise ConfigError(
                f"{source}: {_mapping_problem(exc)} (see docs/authoring.md, '{cls.docs_section}')"
            ) from None
        kind = getattr(mapping, "kind", None)
        if cls.mapping_kind is not None and kind != cls.mapping_kind:
            raise ConfigError(
                f"{source}: kind = {kind!r}: this mapping has kind {cls.mapping_kind!r}"
            )
        return mapping


_OPTION_OF = {
    "family": "--family",
    "id": "--id",
    "prompt": "--prompt",
    "solution": "--solution",
    "gold": "--solution",
    "checks": "--checks",
    "setup": "--setup",
    "entry": "--entry",
    "kind": "--kind",
}
"""A mapping key -> the `gym env import` option that gives it."""


def _mapping_problem(exc: ValidationError) -> str:
    """What a mapping lacks or gets wrong.

    Every missing key by name (and the option that gives it), else the first wrong value.
    """
    errors = exc.errors()
    missing = [".".join(map(str, e["loc"])) for e in errors if e["type"] == "missing"]
    if missing:
        keys = ", ".join(missing)
        options = [_OPTION_OF[k] for k in missing if k in _OPTION_OF]
        given = f" (on the command line: {', '.join(options)})" if options else ""
        return f"missing {keys}: set {'it' if len(missing) == 1 else 'them'} in the mapping{given}"
    first = errors[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"{where} = {str(first.get('input'))[:120]!r}: {first['msg']}"


def check_source(path: Path, fmt: str | None = None) -> None:
    """Refuse a dataset file that does not exist, before its mapping is read.

    A Hugging Face dataset (``fmt`` ``hf``) may be a cached name, not a path: not checked.

    Raises:
        ConfigError: no such file or folder.
    """
    if (fmt or _format_of(path)) != "hf" and not path.exists():
        raise ConfigError(f"{path}: no such file or folder: name the dataset to import")


class TaskFormat(BaseModel):
    """Where imported tasks go and how they are graded.

    The part of a mapping that is not about record fields; give it alone when a
    callable maps the records.
    """

    model_config = ConfigDict(extra="forbid")

    family: str
    """The family: tasks are written under ``<seeds>/<family>/``."""
    splits: dict[str, SplitUse] = Field(default_factory=lambda: dict(DEFAULT_SPLITS))
    """The family's splits and their roles; a record in any other split is refused."""
    kind: Literal["calls", "pytest"] = "calls"
    """Grading kind: ``calls`` (trusted checks, the function called across a process
    boundary, plain values only) or ``pytest`` (checks run by pytest beside the code)."""
    module: str = "solution.py"
    """The workspace file the agent writes."""
    stub: bool = True
    """Start the workspace with the entry's signature and a body that raises."""
    call_timeout: float = 10.0
    """calls: seconds one call of the function may take."""
    call_timeouts: dict[str, float] = Field(default_factory=dict)
    """calls: task id -> its own call timeout, for a task whose reference is slow."""
    timeout: float = 120.0
    """Seconds all checks of a task may take."""
    float_tolerance: float | None = Field(default=None, gt=0, lt=1)
    """Compare floats within this relative tolerance: each ``assert A == B`` of the checks
    becomes ``assert _close(A, B)`` (`gym._datasets._floats`); None keeps ``==``, bit for
    bit."""


class Correction(BaseModel):
    """A documented erratum: fields of one record replaced before it becomes a task.

    The dataset file stays as it is; the index's mapping records the correction and why.
    """

    model_config = ConfigDict(extra="forbid")

    why: str = Field(min_length=1)
    """What the data says, what is used instead, and why (shipped with the mapping)."""
    fields: dict[str, Any] = Field(min_length=1)
    """Record field -> the value the task is built from instead (the field must exist)."""


class DatasetMapping(TaskFormat, MappingFile):
    """How the records of a dataset become tasks of a family (a mapping file's contents).

    Templates are Python format strings over the record's fields (``{task_id}``,
    ``{test_list[0]}``; write ``{{`` and ``}}`` for literal braces); the other keys name
    record fields.
    """

    id: str
    """Template of the task id, e.g. ``MBPP/{task_id}``."""
    prompt: str
    """Template of the prompt the agent reads."""
    solution: str
    """Field holding the reference solution (a Python module's source)."""
    checks: str
    """Field holding the checks: a list of statements (each one check), or one string of
    test code (one check)."""
    setup: str = ""
    """Field holding code run before each check (objects the checks use); a record
    without it (or with it empty) has no setup."""
    entry: str = ""
    """Field holding the name of the function under test; by default the first function
    the first check calls that the reference solution defines."""
    split: SplitRule = Field(default_factory=SplitRule)
    """How the split is found (``train`` for every record by default)."""
    tags: dict[str, str] = Field(default_factory=dict)
    """Tag -> template; every tag is a report slice."""
    json_fields: list[str] = Field(default_factory=list)
    """Fields whose values are JSON text to decode first (lists in a CSV file)."""
    corrections: dict[str, Correction] = Field(default_factory=dict)
    """Task id -> a correction of its record (an erratum of the data, with its reason)."""

    def __call__(self, record: Mapping[str, Any]) -> ImportedTask:
        """The task one record becomes.

        Raises:
            ConfigError: a field is missing or a template names an absent field.
        """
        record = self._decoded(record)
        task_id = _fill("id", self.id, record)
        record = self._corrected(task_id, record)
        checks = _field(record, self.checks, "checks")
        solution = str(_field(record, self.solution, "solution")).replace("\r\n", "\n")
        listed = [str(c) for c in checks] if isinstance(checks, list) else [str(checks)]
        return ImportedTask(
            id=task_id,
            prompt=_fill("prompt", self.prompt, record),
            split=self.split.split_of(record),
            tags={k: _fill(f"tags.{k}", v, record) for k, v in self.tags.items()},
            solution=solution,
            checks=listed,
            setup=str(record.get(self.setup) or "") if self.setup else "",
            entry=str(_field(record, self.entry, "entry")) if self.entry else "",
        )

    def _corrected(self, task_id: str, record: dict[str, Any]) -> dict[str, Any]:
        correction = self.corrections.get(task_id)
        if correction is None:
            return record
        unknown = sorted(set(correction.fields) - set(record))
        if unknown:
            fields = ", ".join(sorted(map(str, record)))
            raise ConfigError(
                f"corrections.{task_id!r}: the record has no field {unknown[0]!r} "
                f"(its fields: {fields})"
            )
        return {**record, **correction.fields}

    def _decoded(self, record: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(record)
        for name in self.json_fields:
            try:
                out[name] = json.loads(out[name])
            except (KeyError, TypeError, ValueError) as exc:
                raise ConfigError(f"json_fields: {name} = {out.get(name)!r}: {exc}") from exc
        return out


class ImportedTask(BaseModel):
    """One dataset record as a task, before it is written (what a mapping produces)."""

    id: str
    """Task id (unique in the family)."""
    prompt: str
    """What the agent reads."""
    split: str = "train"
    """Split name (one the family declares)."""
    tags: dict[str, str] = Field(default_factory=dict)
    """Slice tags."""
    solution: str
    """Reference solution: the module the oracle writes."""
    checks: list[str]
    """Check code, one item per check (assert statements, or test code)."""
    setup: str = ""
    """Code run before each check."""
    entry: str = ""
    """The function under test; derived from the checks and solution when empty."""


Mapper = Callable[[Mapping[str, Any]], ImportedTask | None]
"""A callable turning a record into a task (None skips the record)."""


def _field(record: Mapping[str, Any], name: str, key: str) -> Any:
    """A record's field (dotted names reach into nested objects).

    Raises:
        ConfigError: absent; the message names the mapping key and the record's fields.
    """
    value: Any = record
    for part in name.split("."):
        if not isinstance(value, Mapping) or part not in value:
            fields = ", ".join(sorted(map(str, record)))
            raise ConfigError(f"{key} = {name!r}: the record has no such field (fields: {fields})")
        value = value[part]
    return value


def _fill(key: str, template: str, record: Mapping[str, Any]) -> str:
    try:
        return template.format_map(record)
    except (KeyError, IndexError, AttributeError, ValueError) as exc:
        fields = ", ".join(sorted(map(str, record)))
        raise ConfigError(
            f"{key}: template {template[:60]!r} cannot be filled from the record: "
            f"{type(exc).__name__}: {exc} (its fields: {fields}; literal braces are {{{{ }}}})"
        ) from exc


def read_records(path: Path, fmt: str | None = None) -> list[dict[str, Any]]:
    """The records of a JSONL, JSON or CSV file, or a Hugging Face dataset saved to disk.

    Args:
        path: the file (or the folder of a saved Hugging Face dataset).
        fmt: ``jsonl``, ``json``, ``csv`` or ``hf``; by default from the suffix.

    Raises:
        ConfigError: unreadable or malformed (the line is named).
    """
    fmt = fmt or _format_of(path)
    if fmt == "hf":
        return _hf_records(str(path))
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the dataset: {exc}") from exc
    if fmt == "csv":
        return [dict(row) for row in csv.DictReader(io.StringIO(text))]
    if fmt == "json":
        data = _json(path, text, 0)
        rows = data.get("data", data.get("rows")) if isinstance(data, dict) else data
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise ConfigError(f"{path}: a JSON dataset is a list of objects (or {{'data': [...]}})")
        return rows
    if fmt != "jsonl":
        raise ConfigError(f"{path}: unknown dataset format {fmt!r}; use jsonl, json, csv or hf")
    rows = [_json(path, line, n) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    bad = next((n for n, r in enumerate(rows, 1) if not isinstance(r, dict)), None)
    if bad is not None:
        raise ConfigError(f"{path}: record {bad} is not a JSON object")
    return rows


def _format_of(path: Path) -> str:
    if path.is_dir():
        return "hf"
    suffix = path.suffix.lower().lstrip(".")
    return {"ndjson": "jsonl"}.get(suffix, suffix)


def _json(path: Path, text: str, line: int) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        where = f" line {line}" if line else ""
        raise ConfigError(f"{path}{where}: not valid JSON: {exc}") from exc


def _hf_records(name: str) -> list[dict[str, Any]]:
    """A Hugging Face dataset available locally: a ``save_to_disk`` folder, or a cached name."""
    try:
        import datasets  # type: ignore[import-not-found, unused-ignore]
    except ImportError as exc:
        raise ConfigError(
            "reading a Hugging Face dataset needs the `datasets` package: pip install datasets"
        ) from exc
    path = Path(name)
    data = datasets.load_from_disk(name) if path.is_dir() else datasets.load_dataset(name)
    if isinstance(data, datasets.DatasetDict):
        return [dict(r) for split in data.values() for r in split]
    return [dict(r) for r in data]


# -- one task's files ------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def parse_python(source: str) -> ast.Module:
    """Parse once per source (a task's solution is read several times); never mutate.

    Warnings about the dataset's own code (an invalid escape sequence in a regex
    string, say) are not problems of the task: they are silenced here.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _parse_python(source)


def folder_name(task_id: str) -> str:
    """The folder of a task id (``MBPP/11`` -> ``MBPP_11``)."""
    return _SAFE.sub("_", task_id).strip("._") or "task"


def _defined(tree: ast.Module) -> dict[str, ast.stmt]:
    return {
        n.name: n
        for n in tree.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }


def entry_of(task: ImportedTask) -> str:
    """The function under test.

    The one given, else the first function the first check calls that the solution
    defines.
    """
    if task.entry:
        return task.entry
    defined = _defined(parse_python(task.solution))
    for check in task.checks[:1]:
        for node in ast.walk(parse_python(check.strip())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                target = defined.get(node.func.id)
                if isinstance(target, ast.FunctionDef | ast.AsyncFunctionDef):
                    return node.func.id
    return ""


def problems(task: ImportedTask, splits: Mapping[str, SplitUse]) -> list[str]:
    """What is wrong with a task, field by field (empty when it can be written)."""
    out: list[str] = []
    if not task.id.strip():
        out.append("id: empty")
    if not task.prompt.strip():
        out.append("prompt: empty")
    if task.split not in splits:
        out.append(f"split = {task.split!r}: not a declared split; allowed: {', '.join(splits)}")
    for name, code in [("solution", task.solution), ("setup", task.setup)] + [
        (f"checks[{i}]", c) for i, c in enumerate(task.checks)
    ]:
        try:
            parse_python(code.strip() or "pass")
        except SyntaxError as exc:
            out.append(f"{name}: not valid Python: {exc.msg} (line {exc.lineno})")
    if not task.checks:
        out.append("checks: none")
    if out:
        return out
    for i, code in enumerate(task.checks):
        nodes = list(ast.walk(parse_python(code.strip())))
        if not any(isinstance(n, ast.Assert | ast.Call | ast.Raise) for n in nodes):
            out.append(f"checks[{i}] = {code[:60]!r}: no assert, call or raise, so it cannot fail")
    entry = entry_of(task)
    if not _IDENT.match(entry):
        out.append(f"entry = {entry!r}: no function of the solution that the checks call")
    elif entry not in _defined(parse_python(task.solution)):
        out.append(f"entry = {entry!r}: the solution defines no such function")
    return out


def _multiline_string(code: str) -> bool:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return True
    return any(t.type == tokenize.STRING and t.start[0] != t.end[0] for t in tokens)


def _body(code: str) -> str:
    """Statements as the body of a function.

    Indented, or exec'd when indenting would change a multi-line string.
    """
    code = code.replace("\r\n", "\n").strip("\n")
    if _multiline_string(code):
        return f"    exec(compile({code!r}, '<check>', 'exec'), globals())\n"
    return "".join(f"    {line}\n" if line.strip() else "\n" for line in code.splitlines())


def _bound(code: str) -> list[str]:
    names = set()
    for node in ast.walk(parse_python(code)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return sorted(names)


def shared_names(task: ImportedTask, entry: str) -> list[str]:
    """Functions and classes of the solution, besides the entry, that the checks use.

    A dataset's tests usually run in the solution's namespace (MBPP's build trees of
    the solution's ``Node``); in the ``calls`` kind they are imported from the solution
    module, so the checker holds them as handles to the worker's objects.
    """
    code = "\n".join(c.replace("\r\n", "\n").strip() for c in [task.setup, *task.checks])
    tree = parse_python(code)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    own = set(_bound(code)) | {entry}
    return [name for name in _defined(parse_python(task.solution)) if name in used - own]


def _checked(task: ImportedTask, tolerance: float | None) -> tuple[list[str], str]:
    """The task's checks and the definition they call (``""`` if none).

    With a ``tolerance``, each ``assert A == B`` of them calls ``_close`` (`tolerant`),
    defined by the second item.
    """
    if tolerance is None:
        return list(task.checks), ""
    checks = [tolerant(check) for check in task.checks]
    return checks, ("\n" + close_source(tolerance) if checks != task.checks else "")


def _calls_checks(task: ImportedTask, entry: str, origin: str, tolerance: float | None) -> str:
    checks, close = _checked(task, tolerance)
    shared = shared_names(task, entry)
    lines = [
        f"# Generated by boxgym's importer ({GENERATOR}) from {origin}.\n",
        "# Run by the trusted grading runner, never beside the solution: each check gets\n",
        f"# `candidate`, the solution's `{entry}` called in an unprivileged process.\n",
    ]
    if shared:
        lines.append(
            f"# {', '.join(shared)}: the solution's own, imported from it in each check.\n"
        )
    if task.setup.strip():
        setup = task.setup.replace("\r\n", "\n")
        names = ", ".join(_bound(setup))
        lines += ["\n\n", "def _setup():\n", f"    global {names}\n" if names else ""]
        lines.append(_body(setup))
    if close:
        lines.append(close)
    for i, check in enumerate(checks, 1):
        lines += [
            "\n\n",
            f"def check_{i}(candidate):\n",
            f"    global {', '.join([entry, *shared])}\n",
        ]
        lines.append(f"    {entry} = candidate\n")
        if shared:
            lines.append(f"    from solution import {', '.join(shared)}\n")
        if task.setup.strip():
            lines.append("    _setup()\n")
        lines.append(_body(check))
    return "".join(lines)


def _pytest_checks(
    task: ImportedTask, entry: str, origin: str, module: str, tolerance: float | None
) -> str:
    checks, close = _checked(task, tolerance)
    name = Path(module).stem
    lines = [
        f"# Generated by boxgym's importer ({GENERATOR}) from {origin}.\n",
        f"from {name} import *  # noqa: F403 - the checks call the solution's names\n",
        f"from {name} import {entry}  # noqa: F401\n",
    ]
    if task.setup.strip():
        lines += ["\n", task.setup.replace("\r\n", "\n").strip("\n") + "\n"]
    if close:
        lines.append(close)
    for i, check in enumerate(checks, 1):
        lines += ["\n\n", f"def test_{i}():\n", _body(check)]
    return "".join(lines)


def _stub(task: ImportedTask, entry: str) -> str:
    """The workspace's first file: the entry's signature with a body that raises.

    Before it, the classes the checks use (as the solution defines them) and the
    signatures of the solution's other functions they call.
    """
    defined = _defined(parse_python(task.solution))
    parts = [_signature(defined[name]) for name in shared_names(task, entry)]
    return "".join(f"{part}\n\n" for part in parts) + _signature(defined[entry])


def _signature(node: ast.stmt) -> str:
    if isinstance(node, ast.ClassDef):
        return ast.unparse(node) + "\n"
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    return f"{prefix} {node.name}({ast.unparse(node.args)}):\n    raise NotImplementedError\n"


def _toml_string(text: str) -> str:
    """A TOML basic string holding ``text`` exactly (JSON escapes are valid TOML)."""
    return json.dumps(text, ensure_ascii=False)


def _task_toml(task: ImportedTask, mapping: TaskFormat, entry: str, origin: str) -> str:
    tests = [f"check_{i}" for i in range(1, len(task.checks) + 1)]
    lines = [
        f"# Generated by boxgym's importer ({GENERATOR}) from {origin}.\n",
        f"id = {_toml_string(task.id)}\n",
        f"split = {_toml_string(task.split)}\n",
        f"allowed_paths = [{_toml_string(mapping.module)}]\n",
        f"prompt = {_toml_string(task.prompt)}\n",
    ]
    if task.tags:
        lines.append("\n[tags]\n")
        lines += [f"{_toml_string(k)} = {_toml_string(v)}\n" for k, v in task.tags.items()]
    lines += ["\n[grading]\n", f"kind = {_toml_string(mapping.kind)}\n"]
    lines.append(f"timeout = {mapping.timeout}\n")
    if mapping.kind == "calls":
        lines.append(f"module = {_toml_string(mapping.module)}\n")
        lines.append(f"entry = {_toml_string(entry)}\n")
        lines.append(f"tests = [{', '.join(_toml_string(t) for t in tests)}]\n")
        seconds = mapping.call_timeouts.get(task.id, mapping.call_timeout)
        lines.append(f"call_timeout = {seconds}\n")
    return "".join(lines)


def seed_files(task: ImportedTask, mapping: TaskFormat, origin: str) -> dict[str, bytes]:
    """Every file of the task's seed folder: relative posix path -> bytes.

    Args:
        task: the task (with no `problems`).
        mapping: the kind, module and stub settings.
        origin: where it came from, for the files' header (``mbpp.jsonl record 12``).
    """
    entry = entry_of(task)
    tolerance = mapping.float_tolerance
    checks = (
        _calls_checks(task, entry, origin, tolerance)
        if mapping.kind == "calls"
        else _pytest_checks(task, entry, origin, mapping.module, tolerance)
    )
    solution = task.solution if task.solution.endswith("\n") else task.solution + "\n"
    files = {
        "task.toml": _task_toml(task, mapping, entry, origin),
        f"oracle/{mapping.module}": solution,
        "hidden/" + ("checks.py" if mapping.kind == "calls" else "test_checks.py"): checks,
    }
    if mapping.stub:
        files[f"repo/{mapping.module}"] = _stub(task, entry)
    return {rel: text.encode() for rel, text in files.items()}
