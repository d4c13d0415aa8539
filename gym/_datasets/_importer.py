"""The importer: a dataset becomes seed tasks, as task folders or as one index.

Two layouts, one set of files per task (`gym._datasets._dataset.seed_files`):

* ``folders``: one seed folder per task under ``<seeds>/<family>/`` (task.toml,
  repo/, oracle/, hidden/), as a hand-written family has them.
* ``index``: the dataset file itself (copied byte for byte) beside ``index.json``,
  which holds the mapping and, per task, its id, split, record number and the hash of
  the files it becomes. `load_indexed_tasks` rebuilds the task folders from the
  records into a cache under the data dir on first use, and refuses any task whose
  files no longer match the hash recorded when it was imported and validated.

Every task is checked as it is written: its fields (`gym._datasets._dataset.problems`), then the
written task.toml read back. A bad record is reported (record number, field, value)
and left out; the others are written.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from gym._core._errors import ConfigError
from gym._core._models import SplitUse, Task, TaskList, load_tasks, natural_key
from gym._core._paths import data_dir
from gym._datasets._dataset import (
    GENERATOR,
    DatasetMapping,
    ImportedTask,
    Mapper,
    TaskFormat,
    folder_name,
    problems,
    read_records,
    seed_files,
)

__all__ = ["INDEX", "ImportResult", "import_dataset", "load_indexed_tasks"]

INDEX = "index.json"
Layout = Literal["folders", "index"]


class ImportResult(BaseModel):
    """What an import wrote and what it refused."""

    family: str
    """The family the tasks belong to."""
    folder: str
    """``<seeds>/<family>``: where they were written."""
    layout: Layout
    """``folders`` or ``index``."""
    written: list[str] = Field(default_factory=list)
    """Ids of the tasks written, in natural order."""
    splits: dict[str, int] = Field(default_factory=dict)
    """Tasks written per split."""
    skipped: int = 0
    """Records the mapping chose to skip (a callable returning None)."""
    problems: list[str] = Field(default_factory=list)
    """One line per refused record: record number, id, field, value, what is allowed."""


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _files_digest(files: Mapping[str, bytes]) -> str:
    h = hashlib.sha256()
    for rel, data in sorted(files.items()):
        h.update(rel.encode() + b"\0" + _digest(data).encode())
    return h.hexdigest()


def write_folder(target: Path, files: Mapping[str, bytes]) -> None:
    """Write a task folder atomically (built beside it, then renamed into place).

    A folder that already holds exactly these files is left as it is.
    """
    if _holds(target, files):
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    for rel, data in files.items():
        (build / rel).parent.mkdir(parents=True, exist_ok=True)
        (build / rel).write_bytes(data)
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}-old-", dir=target.parent))
        try:
            os.replace(target, old / "task")
        except FileNotFoundError:
            pass  # another process moved it first
        shutil.rmtree(old, ignore_errors=True)
    try:
        os.replace(build, target)
    except OSError:
        shutil.rmtree(build, ignore_errors=True)
        if not _holds(target, files):
            raise


def _holds(target: Path, files: Mapping[str, bytes]) -> bool:
    """Whether a folder holds exactly these files (one holding a link does not)."""
    from gym._core._tree import read_tree

    try:
        return read_tree(target) == dict(files)
    except ConfigError:
        return False


def _read_back(folder: Path, task: ImportedTask) -> list[str]:
    """What differs when the written task.toml is read back (empty when nothing)."""
    import tomllib

    spec = tomllib.loads((folder / "task.toml").read_text())
    wanted = {"id": task.id, "split": task.split, "prompt": task.prompt}
    return [
        f"{k}: written {spec.get(k)!r}, wanted {v!r}" for k, v in wanted.items() if spec.get(k) != v
    ]


class _Built(BaseModel):
    """One record turned into a task and its files."""

    record: int
    task: ImportedTask
    files: dict[str, bytes]


def _build(
    records: list[dict[str, Any]],
    mapper: Mapper,
    fmt: TaskFormat,
    origin: str,
    result: ImportResult,
    progress: Callable[[int, int], None] | None,
) -> list[_Built]:
    built: list[_Built] = []
    folders: dict[str, str] = {}
    for n, record in enumerate(records):
        where = f"{origin} record {n + 1}"
        try:
            task = mapper(record)
        except (ConfigError, ValueError, TypeError) as exc:
            result.problems.append(f"{where}: {exc}")
            continue
        finally:
            if progress:
                progress(n + 1, len(records))
        if task is None:
            result.skipped += 1
            continue
        wrong = problems(task, fmt.splits)
        name = folder_name(task.id)
        if name in folders:
            wrong.append(f"id = {task.id!r}: its folder {name} is already {folders[name]}'s")
        if wrong:
            result.problems += [f"{where} ({task.id}): {w}" for w in wrong]
            continue
        folders[name] = task.id
        built.append(_Built(record=n, task=task, files=seed_files(task, fmt, where)))
    return built


def import_dataset(
    source: Path | str | Iterable[Mapping[str, Any]],
    mapping: DatasetMapping | Mapper,
    seeds: Path | str,
    *,
    task_format: TaskFormat | None = None,
    layout: Layout = "folders",
    fmt: str | None = None,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ImportResult:
    """Turn a dataset into seed tasks of a family, checking each task as it is written.

    Args:
        source: a JSONL, JSON or CSV file, a saved Hugging Face dataset folder, or the
            records themselves (``folders`` layout only).
        mapping: a `DatasetMapping` (a mapping file's contents), or a callable taking a
            record and returning an `ImportedTask` (or None to skip the record).
        seeds: the seeds folder; tasks go to ``<seeds>/<family>/``.
        task_format: family, splits and grading settings, needed with a callable
            (a `DatasetMapping` carries its own).
        layout: ``folders`` (one folder per task) or ``index`` (the dataset file
            copied beside an ``index.json``; a `DatasetMapping` only).
        fmt: the file's format (``jsonl``, ``json``, ``csv``, ``hf``); from its suffix
            by default.
        limit: import only the first N records.
        progress: called with (records done, records in all).

    Returns:
        What was written, and one line per record refused.

    Raises:
        ConfigError: the dataset cannot be read, or the arguments do not fit together.
    """
    fmt_ = task_format or (mapping if isinstance(mapping, DatasetMapping) else None)
    if fmt_ is None:
        raise ConfigError("a callable mapping needs task_format=TaskFormat(family=...)")
    path = Path(source) if isinstance(source, str | Path) else None
    if layout == "index" and (path is None or not isinstance(mapping, DatasetMapping)):
        raise ConfigError("the index layout needs a dataset file and a DatasetMapping")
    if path is not None:
        records = read_records(path, fmt)[:limit]
    else:
        assert not isinstance(source, str | Path)
        records = [dict(r) for r in source][:limit]
    origin = path.name if path is not None else "records"
    folder = Path(seeds) / fmt_.family
    result = ImportResult(family=fmt_.family, folder=str(folder), layout=layout)
    built = _build(records, mapping, fmt_, origin, result, progress)
    if layout == "folders":
        _write_folders(folder, built, result)
    else:
        assert path is not None and isinstance(mapping, DatasetMapping)
        _write_index(folder, path, mapping, built, len(records), result)
    result.written.sort(key=natural_key)
    return result


def _write_folders(folder: Path, built: list[_Built], result: ImportResult) -> None:
    for item in built:
        target = folder / folder_name(item.task.id)
        write_folder(target, item.files)
        wrong = _read_back(target, item.task)
        if wrong:
            result.problems += [f"{target / 'task.toml'}: {w}" for w in wrong]
            continue
        result.written.append(item.task.id)
        result.splits[item.task.split] = result.splits.get(item.task.split, 0) + 1


def _write_index(
    folder: Path,
    path: Path,
    mapping: DatasetMapping,
    built: list[_Built],
    records: int,
    result: ImportResult,
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    data = path.read_bytes()
    copy = folder / path.name
    if not copy.exists() or copy.resolve() != path.resolve():
        copy.write_bytes(data)  # byte for byte: the index pins its sha256
    tasks = []
    for item in sorted(built, key=lambda b: natural_key(b.task.id)):
        tasks.append(
            {
                "id": item.task.id,
                "split": item.task.split,
                "record": item.record,
                "sha256": _files_digest(item.files),
            }
        )
        result.written.append(item.task.id)
        result.splits[item.task.split] = result.splits.get(item.task.split, 0) + 1
    head = {
        "format": "boxgym-index/1",
        "generator": GENERATOR,
        "family": mapping.family,
        "dataset": {"file": path.name, "sha256": _digest(data), "records": records},
        "mapping": mapping.model_dump(mode="json"),
    }
    lines = [json.dumps(t, ensure_ascii=False) for t in tasks]
    text = json.dumps(head, indent=1, ensure_ascii=False)[:-2]
    text += ',\n "tasks": [\n  ' + ",\n  ".join(lines) + "\n ]\n}\n"
    tmp = folder / f".{INDEX}.tmp"
    tmp.write_text(text)
    tmp.replace(folder / INDEX)


# -- loading an index ----------------------------------------------------------------


class _Index(BaseModel):
    format: str
    generator: str
    family: str
    dataset: dict[str, Any]
    mapping: dict[str, Any] | None
    tasks: list[dict[str, Any]]


_memo: dict[tuple[Any, ...], TaskList] = {}
_memo_lock = threading.Lock()


def load_indexed_tasks(
    folder: Path, *, mapper: Mapper | None = None, splits: Mapping[str, SplitUse] | None = None
) -> TaskList:
    """The tasks of an index-layout family folder (``<seeds>/<family>/index.json``).

    The task folders are rebuilt from the dataset records into a cache under the data
    dir (once per index and process); a task whose files differ from the hash its index
    recorded is left out with a problem, as is one in a split the family does not
    declare.

    Args:
        folder: the folder holding ``index.json`` and the dataset file.
        mapper: the callable the index was made with, when it was not a mapping.
        splits: the family's splits and roles (the index's mapping's by default).

    Raises:
        ConfigError: the index or the dataset is unreadable, or the dataset is not the
            one the index was made from (its sha256 differs).
    """
    index_file = folder / INDEX
    try:
        raw = index_file.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{index_file}: cannot read the index: {exc}") from exc
    index = _parse_index(index_file, raw)
    dataset = _check_dataset(folder, index)  # every time: the file may have changed since
    key = (str(index_file.resolve()), _digest(raw), str(data_dir()), id(mapper), str(splits))
    with _memo_lock:
        if key not in _memo:
            _memo[key] = _load_index(folder, index, raw, dataset, mapper, splits)
        cached = _memo[key]
    return TaskList(cached, cached.problems)


def _parse_index(index_file: Path, raw: bytes) -> _Index:
    try:
        return _Index.model_validate_json(raw)
    except ValueError as exc:
        raise ConfigError(f"{index_file}: not a boxgym index: {str(exc)[:300]}") from exc


def _check_dataset(folder: Path, index: _Index) -> Path:
    dataset = folder / str(index.dataset["file"])
    data = dataset.read_bytes() if dataset.is_file() else b""
    if _digest(data) != index.dataset["sha256"]:
        raise ConfigError(
            f"{dataset}: sha256 = {_digest(data) if data else 'missing file'}, but "
            f"{folder / INDEX} was made from sha256 = {index.dataset['sha256']}: the data "
            "changed since it was imported; restore the file or import it again "
            "(gym env import --layout index)"
        )
    return dataset


class _Snapshot(BaseModel):
    """The loaded tasks of one index, kept beside their cached folders."""

    tasks: list[Task]
    problems: list[str]


def _load_index(
    folder: Path,
    index: _Index,
    raw: bytes,
    dataset: Path,
    mapper: Mapper | None,
    splits: Mapping[str, SplitUse] | None,
) -> TaskList:
    mapping = DatasetMapping.model_validate(index.mapping) if index.mapping else None
    fmt_ = mapping or TaskFormat(family=index.family)
    if splits is not None:
        fmt_ = fmt_.model_copy(update={"splits": dict(splits)})
    cache = data_dir() / "cache" / "datasets" / f"{index.family}-{_digest(raw)[:16]}"
    snapshot = cache / f"tasks-{_digest(json.dumps(fmt_.splits).encode())[:8]}.json"
    if snapshot.is_file():  # written last, once every folder was built and checked
        try:
            kept = _Snapshot.model_validate_json(snapshot.read_bytes())
            return TaskList(kept.tasks, kept.problems)
        except ValueError:
            pass  # damaged: build it again
    run = mapper or mapping
    if run is None:
        raise ConfigError(f"{folder / INDEX} was made with a callable: pass it as mapper=")
    records = read_records(dataset)
    problems_: list[str] = []
    for entry in index.tasks:
        problem = _materialise(entry, records, run, fmt_, dataset.name, cache / index.family)
        if problem:
            problems_.append(f"{folder / INDEX}: task {entry.get('id')!r}: {problem}")
    tasks = load_tasks(cache, index.family, splits=fmt_.splits)
    result = TaskList(tasks, [*problems_, *tasks.problems])
    tmp = snapshot.with_name(f".{snapshot.name}.{os.getpid()}")
    tmp.write_text(_Snapshot(tasks=list(result), problems=result.problems).model_dump_json())
    tmp.replace(snapshot)
    return result


def _materialise(
    entry: dict[str, Any],
    records: list[dict[str, Any]],
    run: Mapper,
    fmt_: TaskFormat,
    origin: str,
    root: Path,
) -> str:
    """Write one indexed task's folder; a problem when it cannot be (else '')."""
    n = int(entry.get("record", -1))
    if not 0 <= n < len(records):
        return f"record = {n}: the dataset has records 0..{len(records) - 1}"
    try:
        task = run(records[n])
    except (ConfigError, ValueError, TypeError) as exc:
        return f"record {n + 1}: {exc}"
    if task is None or task.id != entry.get("id"):
        return f"record {n + 1} now maps to {task.id if task else None!r}, not this id"
    wrong = problems(task, fmt_.splits)
    if wrong:
        return "; ".join(wrong)
    files = seed_files(task, fmt_, f"{origin} record {n + 1}")
    if _files_digest(files) != entry.get("sha256"):
        return (
            "its files differ from the ones imported and validated (sha256 mismatch): "
            "the importer or the mapping changed; import again and revalidate"
        )
    write_folder(root / folder_name(task.id), files)
    return ""
