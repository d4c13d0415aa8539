"""`gym env import`: a dataset file becomes an environment's tasks."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from gym._cli._app import DbOpt, JsonFlag, console, env_app, err, one_of, print_json
from gym._core._errors import ConfigError

__all__: list[str] = []

_OPTIONS = ("family", "id", "prompt", "solution", "checks", "setup", "entry", "kind", "module")


def _mapping(file: Path | None, options: dict[str, Any]) -> Any:
    """The mapping file's contents with the command line's options laid over them."""
    import tomllib

    from gym.datasets import DatasetMapping

    data: dict[str, Any] = {}
    if file is not None:
        try:
            data = tomllib.loads(file.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{file}: cannot read the mapping: {exc}") from exc
    data |= {k: v for k, v in options.items() if v is not None and k in _OPTIONS}
    if options.get("split_field"):
        data["split"] = {"field": options["split_field"]}
    elif options.get("split_value"):
        data["split"] = {"value": options["split_value"]}
    if options.get("split_value") and "splits" not in data:
        data["splits"] = {"train": "training", "eval": "held-out"}
    return DatasetMapping.from_dict(data, source=str(file or "the command line"))


def _envs_of(family: str) -> list[str]:
    """Registered environments whose family is this one."""
    from gym._envs._registry import env_class, env_ids

    out = []
    for env_id in env_ids():
        try:
            if env_class(env_id).family == family:
                out.append(env_id)
        except Exception:  # a broken environment is not this family's
            continue
    return out


@env_app.command("import")
def env_import(
    source: Annotated[Path, typer.Argument(help="JSONL, JSON or CSV file (or HF dataset dir).")],
    mapping: Annotated[
        Path | None, typer.Option("--mapping", "-m", help="Mapping file (TOML).")
    ] = None,
    out: Annotated[
        Path, typer.Option("--out", help="Seeds folder: tasks go to OUT/FAMILY/.")
    ] = Path("seeds"),
    layout: Annotated[
        str,
        typer.Option(
            "--layout",
            callback=one_of("folders", "index"),
            help="folders (one per task) or index (data file + index).",
        ),
    ] = "folders",
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            callback=one_of("jsonl", "json", "csv", "hf"),
            help="jsonl, json, csv or hf (default: suffix).",
        ),
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Only the first N records.")
    ] = None,
    family: Annotated[str | None, typer.Option("--family", help="Family (seeds folder).")] = None,
    id_template: Annotated[
        str | None, typer.Option("--id", help="Id template, e.g. 'MBPP/{task_id}'.")
    ] = None,
    prompt: Annotated[str | None, typer.Option("--prompt", help="Prompt template.")] = None,
    solution: Annotated[str | None, typer.Option("--solution", help="Solution field.")] = None,
    checks: Annotated[str | None, typer.Option("--checks", help="Checks field.")] = None,
    setup: Annotated[str | None, typer.Option("--setup", help="Setup code field.")] = None,
    entry: Annotated[str | None, typer.Option("--entry", help="Entry point field.")] = None,
    split_field: Annotated[
        str | None, typer.Option("--split-field", help="Field holding the split.")
    ] = None,
    split_value: Annotated[
        str | None, typer.Option("--split", help="One split for every record.")
    ] = None,
    kind: Annotated[
        str | None,
        typer.Option(
            "--kind",
            callback=one_of("calls", "pytest", "sql", "shell", "toolapi"),
            help="calls, pytest, sql, shell or toolapi.",
        ),
    ] = None,
    validate: Annotated[
        bool, typer.Option("--validate", help="Then validate the written tasks in containers.")
    ] = False,
    repeats: Annotated[
        int, typer.Option("--repeats", "-k", min=1, help="With --validate: runs per task.")
    ] = 1,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", min=1, help="With --validate: tasks at once.")
    ] = 2,
    as_json: JsonFlag = False,
    db: DbOpt = None,
) -> None:
    """Turn a dataset into tasks of a family through a field mapping (docs/authoring.md).

    Every task is checked as it is written (its fields, then its task.toml read back);
    a bad record is reported (number, field, value) and left out, and the command
    exits non-zero. With --validate, the environments of that family then run the
    oracle, noop and perturbed checks on the new tasks in real containers.
    """
    from gym._core._progress import progress
    from gym._datasets._dataset import check_source
    from gym.datasets import import_dataset

    if layout not in ("folders", "index"):
        raise ConfigError("--layout must be folders or index")
    check_source(source, fmt)
    options = dict(
        family=family, id=id_template, prompt=prompt, solution=solution, checks=checks,
        setup=setup, entry=entry, kind=kind, split_field=split_field, split_value=split_value,
    )  # fmt: skip
    own = next((k for k in _KIND_FIELDS if k in (kind, _file_kind(mapping))), None)
    if own is not None:
        result = _import_kind(own, source, mapping, out, options, fmt, limit)
        _finish(result, validate, repeats, concurrency, db, as_json)
        return
    spec = _mapping(mapping, options)
    with progress("import", unit="records", console=err) as bar:
        result = import_dataset(
            source,
            spec,
            out,
            layout=layout,  # type: ignore[arg-type]  # checked above
            fmt=fmt,
            limit=limit,
            progress=bar.to,
        )
    checks_out = _validate_written(result, repeats, concurrency, db) if validate else []
    if as_json:
        print_json(result.model_dump() | {"validation": [c.model_dump() for c in checks_out]})
    else:
        _print_result(result, checks_out)
    if result.problems or any(not c.ok for c in checks_out):
        raise typer.Exit(1)


def _file_kind(file: Path | None) -> str | None:
    """The ``kind`` a mapping file declares (None without a file or a kind)."""
    import tomllib

    if file is None:
        return None
    try:
        kind = tomllib.loads(file.read_text()).get("kind")
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file}: cannot read the mapping: {exc}") from exc
    return kind if isinstance(kind, str) else None


_KIND_FIELDS: dict[str, tuple[str, ...]] = {
    "sql": ("family", "id", "prompt"),
    "shell": ("family", "id", "prompt"),
    "toolapi": ("family", "id"),
}
"""The dataset kinds with an importer of their own, and the options each takes from the
command line (over its mapping file); ``--solution`` names the gold field of sql and shell."""


def _import_kind(
    kind: str,
    source: Path,
    file: Path | None,
    out: Path,
    options: dict[str, Any],
    fmt: str | None,
    limit: int | None,
) -> Any:
    """A SQL, shell or tool-API dataset into tasks of its family (`gym.datasets.import_<kind>`)."""
    import tomllib

    import gym.datasets
    from gym._core._progress import progress

    importers: dict[str, tuple[Any, Any]] = {
        "sql": (gym.datasets.SQLMapping, gym.datasets.import_sql),
        "shell": (gym.datasets.ShellMapping, gym.datasets.import_shell),
        "toolapi": (gym.datasets.ToolAPIMapping, gym.datasets.import_toolapi),
    }
    mapping_type, import_kind = importers[kind]
    data: dict[str, Any] = {"kind": kind}
    if file is not None:
        data |= tomllib.loads(file.read_text())
    data |= {key: options[key] for key in _KIND_FIELDS[kind] if options.get(key) is not None}
    if options.get("solution") and kind != "toolapi":
        data["gold"] = options["solution"]
    if options.get("split_field"):
        data["split"] = {"field": options["split_field"]}
    elif options.get("split_value"):
        data["split"] = {"value": options["split_value"]}
    spec = mapping_type.from_dict(data, source=str(file or "the command line"))
    if kind == "toolapi":
        return import_kind(source, spec, out, fmt=fmt, limit=limit)
    with progress("import", unit="records", console=err) as bar:
        return import_kind(source, spec, out, fmt=fmt, limit=limit, progress=bar.to)


def _finish(
    result: Any, validate: bool, repeats: int, concurrency: int, db: str | None, as_json: bool
) -> None:
    """Validate what was written (if asked), print it, exit non-zero on any problem."""
    checks_out = _validate_written(result, repeats, concurrency, db) if validate else []
    if as_json:
        print_json(result.model_dump() | {"validation": [c.model_dump() for c in checks_out]})
    else:
        _print_result(result, checks_out)
    if result.problems or any(not c.ok for c in checks_out):
        raise typer.Exit(1)


def _validate_written(result: Any, repeats: int, concurrency: int, db: str | None) -> list[Any]:
    from gym._core._progress import progress
    from gym._run._validate import validate_env
    from gym._store import Store

    env_ids = _envs_of(result.family)
    if not env_ids:
        raise ConfigError(
            f"no registered environment has family {result.family!r}, so the tasks cannot "
            "be validated yet: register one (gym env new, or a class with that family), "
            "then run gym env validate"
        )
    checks: list[Any] = []
    with progress("validate", len(result.written) * len(env_ids), unit="tasks", console=err) as bar:

        def advance(check: Any) -> None:
            if check.resumed:
                bar.skip()
            else:
                bar.advance(**{"valid" if check.ok else "invalid": 1})

        for env_id in env_ids:
            checks += validate_env(
                env_id,
                repeats=repeats,
                tasks=result.written,
                concurrency=concurrency,
                store=Store(db),
                progress=advance,
            )
    return checks


def _print_result(result: Any, checks: list[Any]) -> None:
    table = Table("family", "layout", "folder", "tasks per split", "refused")
    per_split = ", ".join(f"{k} {v}" for k, v in result.splits.items()) or "-"
    folder, refused = Text(str(result.folder)), str(len(result.problems))
    table.add_row(Text(result.family), result.layout, folder, per_split, refused)
    console.print(table)
    for problem in result.problems[:20]:
        err.print(f"[red]refused[/] {escape(problem)}", highlight=False)
    if len(result.problems) > 20:
        err.print(f"... and {len(result.problems) - 20} more (--json lists them all)")
    if checks:
        bad = [c for c in checks if not c.ok]
        for c in bad:
            problems = "; ".join(c.problems)
            err.print(f"[red]invalid[/] {escape(f'{c.env_id} {c.task_id}: {problems}')}")
        console.print(f"{len(checks) - len(bad)}/{len(checks)} tasks valid")
