"""Shell datasets into tasks: a question, a gold command and a file tree per record.

Each record becomes a task folder of a shell family (``environments/shell``'s format)::

    <seeds>/<family>/<task>/
        task.toml        id, split, prompt, compare, paths, tags
        files/...        the initial tree (modes and modification times as the record says)
        hidden/gold.sh   the gold command (only the grading container sees it)

A record's tree is a JSON object of relative path -> content (text), or -> ``{"content":
text, "mode": "0755", "mtime": 1700000000}``; or a string naming a folder inside the
dataset file's folder (never absolute, never climbing out with ``..``, never that folder
itself), copied with its modes and times (links kept as links). Every task is checked as it is
written: its fields, its paths (relative, inside the tree), its size, then its
task.toml read back. A bad record is reported by number and left out.
"""

from __future__ import annotations

import os
import shutil
import tomllib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gym._core._errors import ConfigError
from gym._core._models import DEFAULT_SPLITS, SplitUse, natural_key
from gym._core._tree import confined
from gym._datasets._dataset import MappingFile, SplitRule, folder_name, read_records
from gym._datasets._importer import ImportResult, write_folder

__all__ = ["ShellFile", "ShellMapping", "ShellTask", "import_shell"]

MAX_TREE_BYTES = 16 << 20
"""Bytes of file content one task's tree may hold."""
MAX_TREE_FILES = 2_000
"""Files one task's tree may hold."""
Compared = Literal["output", "files"]
_OUTPUT: list[Compared] = ["output"]


class ShellFile(BaseModel):
    """One file of a task's initial tree."""

    model_config = ConfigDict(extra="forbid")

    content: str = ""
    """Its text (written as UTF-8)."""
    mode: int = Field(default=0o644, ge=0, le=0o777)
    """Permission bits (``"0755"`` in a record is read as octal)."""
    mtime: float | None = None
    """Modification time (Unix seconds); the time of writing when None."""


class ShellTask(BaseModel):
    """One record mapped: what a shell task folder holds."""

    id: str = Field(min_length=1)
    """The task id."""
    split: str
    """Its split (one the mapping declares)."""
    prompt: str = Field(min_length=1)
    """What the agent reads."""
    gold: str = Field(min_length=1)
    """The gold command (bash source run in the workspace)."""
    files: dict[str, ShellFile] | Path = Field(default_factory=dict)
    """The initial tree: relative path -> file, or a folder to copy."""
    compare: tuple[Compared, ...] = Field(default=("output",), min_length=1)
    """What grading compares with the gold's: ``output``, ``files`` or both."""
    paths: tuple[str, ...] = ()
    """Globs the files comparison is limited to (all files when empty)."""
    tags: dict[str, str] = Field(default_factory=dict)
    """Report slices."""
    gold_timeout: float = Field(default=60.0, gt=0, le=600)
    """Seconds the gold command may run."""


class ShellMapping(MappingFile):
    """How records become shell tasks (a mapping file with ``kind = "shell"``).

    Templates (``id``, ``prompt``, tags) are Python format strings over the record's
    fields; the other keys name fields.
    """

    model_config = ConfigDict(extra="forbid")
    mapping_kind: ClassVar[str | None] = "shell"
    docs_section: ClassVar[str] = "A shell environment from a dataset"

    kind: Literal["shell"] = "shell"
    """The importer (``gym env import`` reads it to choose this one)."""
    family: str = "shell"
    """Tasks go to ``<seeds>/<family>/``."""
    id: str = "{id}"
    """Template of the task id."""
    prompt: str = "{question}"
    """Template of the prompt."""
    gold: str = "gold"
    """Field holding the gold command."""
    files: str = "files"
    """Field holding the tree (an object of path -> content, or a folder's name)."""
    compare: list[Compared] | str = Field(default_factory=lambda: _OUTPUT.copy())
    """What is compared, for every record (a list), or a field holding it per record."""
    paths: str = ""
    """Field holding the globs the files comparison is limited to (optional)."""
    split: SplitRule = Field(default_factory=SplitRule)
    """How a record's split is found (``train`` for every record by default)."""
    splits: dict[str, SplitUse] = Field(default_factory=lambda: dict(DEFAULT_SPLITS))
    """The family's splits and their roles."""
    tags: dict[str, str] = Field(default_factory=dict)
    """Tag -> template."""
    gold_timeout: float = Field(default=60.0, gt=0, le=600)
    """Seconds each gold command may run."""

    def task(self, record: Mapping[str, Any], base: Path) -> ShellTask:
        """The task one record becomes (``base``: the folder relative tree names are in).

        Raises:
            ConfigError: a field is missing, or a value is of the wrong kind.
        """
        compare: Any = self.compare
        if isinstance(compare, str):
            compare = _get(record, compare)
        try:
            return ShellTask.model_validate(
                {
                    "id": _fill(self.id, record, "id"),
                    "split": self.split.split_of(record),
                    "prompt": _fill(self.prompt, record, "prompt"),
                    "gold": _get(record, self.gold),
                    "files": _tree(_get(record, self.files), base),
                    "compare": [compare] if isinstance(compare, str) else compare,
                    "paths": _get(record, self.paths) if self.paths else (),
                    "tags": {k: _fill(v, record, f"tags.{k}") for k, v in self.tags.items()},
                    "gold_timeout": self.gold_timeout,
                }
            )
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise ConfigError(f"{where} = {str(err.get('input'))[:200]!r}: {err['msg']}") from None


def _get(record: Mapping[str, Any], field: str) -> Any:
    if field not in record:
        raise ConfigError(f"the record has no field {field!r} (fields: {', '.join(record)})")
    return record[field]


def _fill(template: str, record: Mapping[str, Any], what: str) -> str:
    try:
        return template.format(**record)
    except (KeyError, IndexError, ValueError, AttributeError) as exc:
        raise ConfigError(f"{what}: the template {template!r} cannot be filled: {exc}") from None


def _tree(value: Any, base: Path) -> dict[str, ShellFile] | Path:
    """A record's tree: an object of path -> file, or a folder under ``base``."""
    if isinstance(value, str):
        folder = confined(base, value, "files")  # a record never names a host folder
        if not folder.is_dir():
            raise ConfigError(f"files = {value!r}: no folder {folder}")
        return folder
    if not isinstance(value, dict):
        raise ConfigError(f"files: an object of path -> content, or a folder name; got {value!r}")
    files: dict[str, ShellFile] = {}
    for path, item in value.items():
        if isinstance(item, str):
            files[str(path)] = ShellFile(content=item)
        elif isinstance(item, dict):
            mode = item.get("mode", 0o644)
            files[str(path)] = ShellFile.model_validate(
                {**item, "mode": int(mode, 8) if isinstance(mode, str) else mode}
            )
        else:
            raise ConfigError(f"files[{path!r}]: a text, or {{content, mode, mtime}}")
    return files


def tree_problems(files: dict[str, ShellFile] | Path) -> list[str]:
    """What is wrong with a tree: unsafe or clashing paths, too many files, too large."""
    if isinstance(files, Path):
        sizes = [p.lstat().st_size for p in files.rglob("*") if p.is_file()]
        return _size_problems(len(sizes), sum(sizes))
    out = [f"files: {p!r}: {why}" for p in files if (why := _path_problem(p))]
    names = set(files)
    out += [
        f"files: {p!r} is a file and a folder of {q!r}"
        for q in names
        for p in _parents(q)
        if p in names
    ]
    return out + _size_problems(len(files), sum(len(f.content.encode()) for f in files.values()))


def _size_problems(count: int, size: int) -> list[str]:
    if count > MAX_TREE_FILES:
        return [f"files: {count} files; a task's tree holds at most {MAX_TREE_FILES}"]
    if size > MAX_TREE_BYTES:
        return [f"files: {size} bytes; a task's tree holds at most {MAX_TREE_BYTES}"]
    return []


def _path_problem(path: str) -> str:
    parts = PurePosixPath(path).parts
    if not path or path.startswith("/") or "\\" in path:
        return "must be a relative POSIX path"
    if any(c in path for c in "\0\n\r") or ".." in parts or not parts:
        return "holds '..', a NUL or a line break"
    if path.rstrip("/") != path or "//" in path or "." in parts:
        return "must be normalised (no '.', no '//', no trailing '/')"
    return ""


def _parents(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _toml_string(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    import json

    return json.dumps(text, ensure_ascii=False)


def task_toml(task: ShellTask) -> str:
    """The task.toml of a shell task."""
    lines = [
        f"id = {_toml_string(task.id)}",
        f"split = {_toml_string(task.split)}",
        f"prompt = {_toml_string(task.prompt)}",
        f"compare = [{', '.join(_toml_string(c) for c in task.compare)}]",
    ]
    if task.paths:
        lines.append(f"paths = [{', '.join(_toml_string(p) for p in task.paths)}]")
    if task.gold_timeout != 60.0:
        lines.append(f"gold_timeout = {task.gold_timeout}")
    if task.tags:
        lines.append("\n[tags]")
        lines += [f"{_toml_string(k)} = {_toml_string(v)}" for k, v in sorted(task.tags.items())]
    return "\n".join(lines) + "\n"


def write_task(folder: Path, task: ShellTask) -> None:
    """Write a task folder (atomically), then give its files their modes and times."""
    files = {"task.toml": task_toml(task).encode(), "hidden/gold.sh": task.gold.encode()}
    if isinstance(task.files, dict):
        files |= {f"files/{p}": f.content.encode() for p, f in task.files.items()}
    write_folder(folder, files)
    if isinstance(task.files, Path):
        target = folder / "files"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(task.files, target, symlinks=True)  # copy2: modes and times
        return
    for path, item in task.files.items():
        target = folder / "files" / path
        os.chmod(target, item.mode)
        if item.mtime is not None:
            os.utime(target, (item.mtime, item.mtime))


def import_shell(
    source: Path | str | Iterable[Mapping[str, Any]],
    mapping: ShellMapping,
    seeds: Path | str,
    *,
    fmt: str | None = None,
    limit: int | None = None,
    trees: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ImportResult:
    """Turn a shell dataset into task folders of a shell family, checking each one.

    Args:
        source: a JSONL, JSON or CSV file (or a saved Hugging Face dataset), or the
            records themselves.
        mapping: how records become tasks.
        seeds: the seeds folder; tasks go to ``<seeds>/<family>/``.
        fmt: the file's format; from its suffix by default.
        limit: only the first N records.
        trees: the folder a record's tree names are relative to (the dataset file's
            folder by default, else the working directory).
        progress: called with (records done, records in all).

    Returns:
        What was written, and one line per refused record.
    """
    path = Path(source) if isinstance(source, str | Path) else None
    if path is not None:
        records = read_records(path, fmt)[:limit]
    else:
        assert not isinstance(source, str | Path)
        records = [dict(r) for r in source][:limit]
    base = trees or (path.parent if path else Path.cwd())
    origin = path.name if path else "records"
    folder = Path(seeds) / mapping.family
    result = ImportResult(family=mapping.family, folder=str(folder), layout="folders")
    seen: dict[str, str] = {}
    for n, record in enumerate(records):
        where = f"{origin} record {n + 1}"
        if progress:
            progress(n + 1, len(records))
        task, wrong = _checked(record, mapping, base, seen)
        if task is None:
            result.problems += [f"{where}: {w}" for w in wrong]
            continue
        target = folder / folder_name(task.id)
        write_task(target, task)
        wrong = _read_back(target, task)
        if wrong:
            result.problems += [f"{target / 'task.toml'}: {w}" for w in wrong]
            continue
        result.written.append(task.id)
        result.splits[task.split] = result.splits.get(task.split, 0) + 1
    result.written.sort(key=natural_key)
    return result


def _checked(
    record: Mapping[str, Any], mapping: ShellMapping, base: Path, seen: dict[str, str]
) -> tuple[ShellTask | None, list[str]]:
    """The task of a record and nothing wrong, or None and what is wrong."""
    try:
        task = mapping.task(record, base)
    except ConfigError as exc:
        return None, [str(exc)]
    wrong = [f"({task.id}) {w}" for w in tree_problems(task.files)]
    if task.split not in mapping.splits:
        allowed = ", ".join(repr(s) for s in mapping.splits)
        wrong.append(f"({task.id}) split = {task.split!r} is not declared; allowed: {allowed}")
    name = folder_name(task.id)
    if name in seen:
        wrong.append(f"id = {task.id!r}: its folder {name} is already {seen[name]}'s")
    if wrong:
        return None, wrong
    seen[name] = task.id
    return task, []


def _read_back(folder: Path, task: ShellTask) -> list[str]:
    """What differs when the written task.toml is read back (empty when nothing)."""
    spec = tomllib.loads((folder / "task.toml").read_text())
    wanted: dict[str, Any] = {
        "id": task.id,
        "split": task.split,
        "prompt": task.prompt,
        "compare": list(task.compare),
    }
    gold = (folder / "hidden" / "gold.sh").read_text()
    wrong = [
        f"{k}: written {spec.get(k)!r}, wanted {v!r}" for k, v in wanted.items() if spec.get(k) != v
    ]
    return wrong + ([] if gold == task.gold else ["hidden/gold.sh does not read back as written"])
