"""The ``gym`` command line: doctor, images, environments, runs and reports."""

from __future__ import annotations

import logging
import shlex
import signal
import sys
import time
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from gym._cli._app import (
    DbOpt,
    JsonFlag,
    app,
    console,
    env_app,
    err,
    images_app,
    print_json,
    run_cli,
    tasks_option,
)
from gym._cli._tables import number, print_table, text, words
from gym._core._errors import ConfigError
from gym._core._exit import leave
from gym._core._json import dumps
from gym._core._malloc import cap_arenas

__all__ = ["DbOpt", "JsonFlag", "app", "console", "err", "main", "print_json"]


@app.command()
def doctor(
    reap: Annotated[
        bool, typer.Option("--reap", help="Remove orphaned boxgym containers.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Check Python, the Docker engine, images, leftover containers and disk space.

    Each fix is said once, after the checks, in the order to apply them.
    """
    from gym._cli._doctor import fixes, run_checks, without_fix

    checks = run_checks(do_reap=reap)
    if as_json:
        print_json([c.model_dump() for c in checks])
    else:
        table = Table(show_header=False, box=None)
        for c in checks:
            mark = "[green]ok[/]" if c.ok else "[red]FAIL[/]"
            table.add_row(mark, c.name, Text(without_fix(c)))
        console.print(table)
    failed = [c for c in checks if not c.ok]
    if failed:
        todo = Text("; then ".join(fixes(checks)), style="yellow")
        err.print(Text.assemble((f"{len(failed)} problem(s)", "red"), "; fix: ", todo))
        raise typer.Exit(1)


@images_app.command("build")
def images_build(
    names: Annotated[
        list[str] | None, typer.Argument(help="Image folders (all by default).")
    ] = None,
    verbose: Annotated[bool, typer.Option("-v", "--verbose", help="Show build output.")] = False,
) -> None:
    """Build images/<NAME>/ under a content-addressed tag (cached when unchanged).

    Each image's grading copy too: its files in a layer no agent container shares, which
    grading containers start from (built at the first grading otherwise).
    """
    from gym._sandbox._grading_image import grading_image
    from gym._sandbox._images import build_image, image_names

    for name in names or image_names():
        with console.status(f"building {name}"):
            record = build_image(name, progress=_literal if verbose else None)
        with console.status(f"copying {name} for grading"):
            copy = grading_image(record.digest)
        console.print(
            f"[green]built[/] {record.tag}  {record.digest[:19]}  {record.size_mb} MiB"
            f"  (grading copy {copy[:19]})"
        )


@images_app.command("list")
def images_list(as_json: JsonFlag = False) -> None:
    """List boxgym images in the engine."""
    from gym._sandbox._images import list_images

    records = list_images()
    if as_json:
        print_json([r.model_dump() for r in records])
        return
    table = Table(words("name"), words("tag"), number("digest", justify="left"), number("MiB"))
    for r in records:
        table.add_row(Text(r.name), Text(r.tag), r.digest[:19], f"{r.size_mb}")
    print_table(table, console)


@images_app.command("prune")
def images_prune(
    budget: Annotated[
        str, typer.Option("--budget", help="Disk the engine's images may take (e.g. 20G).")
    ],
    names: Annotated[
        list[str] | None, typer.Argument(help="Only these image folders (all by default).")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only say what would be removed.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Remove boxgym's least recently used images until the engine's fit in a budget.

    Never an image a container uses; rebuilt on demand when needed again.
    """
    from gym._sandbox._image_disk import parse_size, prune

    result = prune(parse_size(budget), dry_run=dry_run, names=names)
    if as_json:
        print_json(result.model_dump())
        return
    verb = "would remove" if dry_run else "removed"
    for image in result.removed:
        console.print(f"{verb} {', '.join(image.names)}  {image.digest[:19]}  {_mib(image.unique)}")
    for image in result.kept_in_use:
        console.print(f"kept {', '.join(image.names)} (a container uses it)")
    after = "estimated " if dry_run else ""
    console.print(
        f"images: {_mib(result.before)} before, {after}{_mib(result.after)} after; "
        f"budget {_mib(result.budget)}"
    )


def _literal(line: str) -> None:
    """Print a line of someone else's output (a build log) as it is: no markup read."""
    console.print(line, markup=False, highlight=False)


def _mib(size: int) -> str:
    return f"{size / 2**20:.0f} MiB"


@env_app.command("list")
def env_list(
    as_json: JsonFlag = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit non-zero if any environment is broken.")
    ] = False,
) -> None:
    """List registered environments with their task counts per split (broken ones too)."""
    from gym._envs._registry import envs

    infos = envs()
    if as_json:
        print_json([i.model_dump() for i in infos])
    else:
        table = Table(
            number("id", justify="left"),
            text("family"),
            number("tasks per split", justify="left"),
            number("max steps"),
            text("status"),
        )
        for i in infos:
            counts = "\n".join(
                f"{name} {n}" + (" (held-out)" if i.splits.get(name) == "held-out" else "")
                for name, n in i.tasks.items()
            )
            status = "[red]broken[/]" if i.broken else "[green]ok[/]"
            table.add_row(i.id, Text(i.family), counts or "-", str(i.max_steps), status)
        # a broken one is also said below the table, with its problems
        print_table(table, console, drop=("family", "max steps", "status"))
        for i in infos:
            for problem in i.problems:
                err.print(f"[red]broken[/] {escape(i.id)}: {escape(problem)}", highlight=False)
    if strict and any(i.broken for i in infos):
        raise typer.Exit(1)


@env_app.command("tasks")
def env_tasks(
    env_id: Annotated[str, typer.Argument(help="An environment id (`gym env list` lists them).")],
    split: Annotated[str | None, typer.Option("--split", help="Only this split.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """List an environment's task ids (what --tasks takes), their splits and prompts."""
    from gym._core._text import clean
    from gym._envs._registry import tasks_of
    from gym._run._runner import check_split, expand_envs

    ids = expand_envs([env_id])
    if len(ids) != 1:
        raise ConfigError(f"{env_id} names {len(ids)} environments: name one of {', '.join(ids)}")
    resolved = ids[0]
    check_split([resolved], split)
    tasks = [t for t in tasks_of(resolved) if split is None or t.split == split]
    if as_json:
        print_json([{"id": t.id, "split": t.split, "prompt": t.prompt} for t in tasks])
        return
    table = Table(words("id"), text("split"), text("prompt"), title=resolved)
    for t in tasks:
        first = clean(" ".join(t.prompt.split()))
        table.add_row(
            Text(t.id), Text(t.split), Text(first[:100] + ("..." if len(first) > 100 else ""))
        )
    print_table(table, console)


def _command(argv: list[str]) -> str:
    """The subcommand a command line names: its first word that is not an option."""
    return next((word for word in argv if not word.startswith("-")), "")


def _terminate(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)


def main() -> None:
    """Entry point of the ``gym`` console script.

    Every error ends as one line (`run_cli`). The command then leaves without the
    interpreter's teardown, which frees every module one by one (0.2-0.35 s on 2 cores,
    5% of a short run): threads that are not daemons are joined, the atexit handlers run
    and the standard streams are flushed first, as in a normal exit. Its threads share
    one malloc arena (`cap_arenas`: no thread has started yet), but for ``gym train``,
    whose tensor threads allocate outside the GIL and keep glibc's arenas.
    """
    signal.signal(signal.SIGINT, signal.default_int_handler)  # gym/__init__.py set one
    if _command(sys.argv[1:]) != "train":
        cap_arenas()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    signal.signal(signal.SIGTERM, _terminate)  # run atexit cleanup (containers) on SIGTERM
    leave(run_cli())


@env_app.command("validate")
def env_validate(
    env_ids: Annotated[
        list[str] | None, typer.Argument(help="Environment ids (or suites, e.g. bundled).")
    ] = None,
    all_envs: Annotated[bool, typer.Option("--all", help="Every registered environment.")] = False,
    repeats: Annotated[
        int, typer.Option("--repeats", "-k", min=1, help="Oracle runs and re-grades per task.")
    ] = 3,
    tasks: Annotated[list[str] | None, tasks_option("Only these task ids", "--task")] = None,
    split: Annotated[str | None, typer.Option("--split", help="Only this split.")] = None,
    limit: Annotated[
        int | None,
        typer.Option("--limit", min=1, help="Only the first N tasks (natural id order)."),
    ] = None,
    shard: Annotated[
        str | None, typer.Option("--shard", help="I/N: only the I-th of N even shares.")
    ] = None,
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Ignore stored results; validate every task again.")
    ] = False,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", min=1, help="Tasks at once.")
    ] = 2,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON line per task as it ends, then a summary.")
    ] = False,
    db: DbOpt = None,
) -> None:
    """Oracle passes, noop and the cheating panel fail, perturbation is flagged, grading is stable.

    The cheating panel: policies that do none of the work (a liar object, constants, the
    prompt's example echoed, an empty answer); each must fail (docs/authoring.md).

    Results are kept per task in the run store (--db): running the same command again
    skips the tasks already validated (unless --fresh) and resumes where it stopped.
    """
    from gym._core._progress import progress
    from gym._envs._registry import env_ids as registered
    from gym._run._runner import check_split, expand_envs
    from gym._run._validate import parse_shard, planned_tasks, validate_env
    from gym._sandbox import client
    from gym._store import Store

    if not all_envs and not env_ids:
        raise ConfigError(
            "no environments to validate: name an environment id (`gym env list` lists "
            "them) or pass --all"
        )
    ids = registered() if all_envs else expand_envs(env_ids or [])
    check_split(ids, split)
    share = parse_shard(shard) if shard else None
    plan = sum(planned_tasks(e, tasks=tasks, split=split, limit=limit, shard=share) for e in ids)
    if plan == 0:  # a CI job would go green having checked nothing
        raise ConfigError(
            "nothing to validate: the --limit, --split, --tasks and --shard given leave no task"
        )
    client()  # the engine answers, or one line says how to start it (not a line per task)
    store = Store(db)
    checks: list[Any] = []
    started = time.monotonic()
    with progress("validate", plan, unit="tasks", console=err) as bar:

        def advance(check: Any) -> None:
            _count_check(bar, check)
            if as_json:
                sys.stdout.write(dumps(check.model_dump() | {"ok": check.ok}) + "\n")
                sys.stdout.flush()
            elif check.problems:  # say it now: a long run may not reach its table
                where = f" {check.env_id} {check.task_id}: " + "; ".join(check.problems)
                bar.note(Text.assemble(("invalid", "red"), where))

        for env_id in ids:
            checks += validate_env(
                env_id,
                repeats=repeats,
                tasks=tasks,
                concurrency=concurrency,
                progress=advance,
                split=split,
                limit=limit,
                shard=share,
                store=store,
                resume=not fresh,
            )
    bad = [c for c in checks if not c.ok]
    summary = _validation_summary(checks, time.monotonic() - started)
    if as_json:
        sys.stdout.write(dumps({"summary": summary}) + "\n")
    else:
        _validation_table([c for c in checks if len(checks) <= 40 or not c.ok])
        resumed = f" ({summary['resumed']} from stored results)" if summary["resumed"] else ""
        infra = f", {summary['infra']} not validated (infra_error: run again)"
        infra = infra if summary["infra"] else ""
        console.print(f"{len(checks) - len(bad)}/{len(checks)} tasks valid{resumed}{infra}")
    if bad:
        raise typer.Exit(1)


def _validation_summary(checks: list[Any], wall_s: float) -> dict[str, Any]:
    """Counts for the summary line: tasks, valid, invalid, resumed, per environment."""
    by_env: dict[str, dict[str, int]] = {}
    for c in checks:
        row = by_env.setdefault(c.env_id, {"tasks": 0, "valid": 0})
        row["tasks"] += 1
        row["valid"] += int(c.ok)
    return {
        "tasks": len(checks),
        "valid": sum(c.ok for c in checks),
        "invalid": sum(not c.ok for c in checks),
        "infra": sum(not c.ok and c.infra for c in checks),
        "resumed": sum(c.resumed for c in checks),
        "envs": by_env,
        "invalid_tasks": [f"{c.env_id} {c.task_id}" for c in checks if not c.ok],
        "wall_s": round(wall_s, 1),
    }


def _count_check(bar: Any, check: Any) -> None:
    """A validated task in the progress: a stored result is skipped (out of the rate)."""
    if check.resumed:
        bar.skip()
    else:
        bar.advance(**{"valid" if check.ok else "invalid": 1})


def _validation_table(checks: list[Any]) -> None:
    table = Table(
        text("env"),
        text("task"),
        number("oracle", justify="left"),
        number("noop", justify="left"),
        text("perturbed"),
        number("regrade", justify="left"),
        text("panel"),
        text("problems"),
    )
    for c in checks:
        table.add_row(
            Text(c.env_id.removeprefix("boxgym/")),
            Text(c.task_id),
            ",".join(c.oracle),
            c.noop,
            c.perturbed,
            {True: "identical", False: "CHANGED", None: "-"}[c.regrade_identical],
            _panel_cell(c.panel, c.exempt),
            Text("; ".join(c.problems), style="red") if c.problems else "[green]ok[/]",
        )
    print_table(table, console)


def _panel_cell(panel: dict[str, str], exempt: dict[str, str]) -> str:
    """The panel of one task: how many failed as required, then each one that did not."""
    if not panel:
        return "-"
    failed = sum(outcome == "fail" for outcome in panel.values())
    parts = [f"{failed}/{len(panel)} fail"]
    for name, outcome in panel.items():
        if outcome == "fail":
            continue
        if outcome == "pass" and name in exempt:
            parts.append(f"[yellow]{name} pass (exempt)[/]")
        elif outcome == "pass":
            parts.append(f"[red]{name} PASSED: invalid[/]")
        else:
            parts.append(f"[red]{name} {outcome}[/]")
    return "\n".join(parts)


@env_app.command("new")
def env_new(
    name: Annotated[str, typer.Argument(help="Folder name, e.g. my_env.")],
    family: Annotated[
        str,
        typer.Option(
            "--family",
            help="code, or a family's template word: api, shell, sql, toolapi (or a plugin's).",
        ),
    ] = "code",
    env_id: Annotated[
        str | None, typer.Option("--id", help="Id (default: boxgym/<Name>-v0 from NAME).")
    ] = None,
) -> None:
    """Scaffold environments/NAME, images/NAME and seeds/NAME with a working example.

    They go under the checkout boxgym runs from (set GYM_ROOT to scaffold elsewhere).
    """
    from gym._envs._scaffold import class_name, scaffold

    for path in scaffold(name, family=family, env_id=env_id):
        console.print(f"created {escape(str(path))}")
    new_id = env_id or f"boxgym/{class_name(name).removesuffix('Env')}-v0"
    console.print(f"next: gym env validate {escape(shlex.quote(new_id))}   (see docs/authoring.md)")


from gym._cli import _datasets, _judge, _redteam, _rft, _runs, _serve, _train  # noqa: E402,F401  (registers import, judge, run, redteam, serve, train...)
