"""`gym redteam`: adversarial policies and injected faults against boxgym itself."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from gym._cli._app import (
    JsonFlag,
    RuntimeOpt,
    app,
    console,
    err,
    one_of,
    print_json,
    use_runtime,
)
from gym._cli._tables import print_table, text
from gym._core._errors import ConfigError

__all__: list[str] = []


@app.command()
def redteam(
    family: Annotated[
        list[str] | None,
        typer.Option(
            "--family",
            "-f",
            help="A kind the manifests declare (code, sql, support...) or an env id.",
        ),
    ] = None,
    only: Annotated[
        list[str] | None, typer.Option("--only", "-k", help="Rows whose name starts with this.")
    ] = None,
    kind: Annotated[
        str | None,
        typer.Option("--kind", callback=one_of("attack", "fault"), help="attack or fault."),
    ] = None,
    fast: Annotated[bool, typer.Option("--fast", help="Only the quick subset.")] = False,
    destructive: Annotated[
        bool,
        typer.Option(
            "--destructive",
            envvar="GYM_REDTEAM_DESTRUCTIVE",
            help="Also restart the Docker daemon mid-run (never on a shared engine).",
        ),
    ] = False,
    long: Annotated[
        bool,
        typer.Option(
            "--long",
            envvar="GYM_REDTEAM_LONG",
            help="Also run the rows that take tens of minutes (resource exhaustion over "
            "every task).",
        ),
    ] = False,
    runtime: RuntimeOpt = None,
    seed: Annotated[
        int | None, typer.Option("--seed", min=0, max=2**63 - 1, help="Seed of the random names.")
    ] = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", min=1, help="Rows at once.")
    ] = 2,
    every_env: Annotated[
        bool,
        typer.Option(
            "--every-env",
            help="Each attack in every env it applies to (default: one env per family).",
        ),
    ] = False,
    module: Annotated[
        list[str] | None,
        typer.Option("--module", help="Also load attacks from this module (importable name)."),
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Known gaps that do not hold fail the run too.")
    ] = False,
    list_only: Annotated[bool, typer.Option("--list", help="List the rows, run nothing.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Run the red-team suite: every attack contained, every fault ends as it must.

    Exits 1 when a row does not hold (known gaps only with --strict).
    """
    from gym._core._progress import progress
    from gym._redteam import load_module, run_suite
    from gym._redteam._core import plan
    from gym._redteam._suite import load_builtin

    if kind not in (None, "attack", "fault"):
        raise ConfigError("--kind must be attack or fault")
    use_runtime(runtime)
    for name in module or []:
        load_module(name)
    kinds = (kind,) if kind else ("attack", "fault")
    load_builtin()
    rows = list(plan(only or (), family or (), fast=fast, kinds=kinds, every_env=every_env))
    if not rows:
        raise ConfigError(_selects_nothing(only or [], family or []))
    if list_only:
        for attack, env_id, covers in rows:
            also = ", ".join(e.removeprefix("boxgym/") for e in covers if e != env_id)
            note = f" (covers {also})" if also else ""
            console.print(f"{attack.kind:6} {escape(attack.name)}  [dim]{env_id}{note}[/]")
        return
    with progress("redteam", unit="rows", console=err) as bar:  # on stderr: --json stays one
        report = run_suite(
            names=only or (),
            families=family or (),
            kinds=kinds,
            fast=fast,
            destructive=destructive,
            long=long,
            seed=seed,
            concurrency=concurrency,
            every_env=every_env,
            runtime=runtime or "runc",
            progress=lambda row: _progress(bar, row),
            planned=bar.plan,
        )
    if as_json:
        print_json(report.model_dump(mode="json"))
    else:
        _table(report)
    if report.failed or (strict and report.gaps):
        raise typer.Exit(1)


def _selects_nothing(only: list[str], family: list[str]) -> str:
    """Why ``-k``/``--family`` (with ``--kind``, ``--fast``) select no row, and what to pass."""
    from gym._redteam._core import ATTACKS, family_of

    envs = {e for attack in ATTACKS.values() for e in attack.envs}
    families = sorted({family_of(e) for e in envs})
    for name in family:
        if name not in envs and name not in families:
            return (
                f"--family {name!r} is no red-team family or env id (families: "
                f"{', '.join(families)}); `gym redteam --list` lists the rows"
            )
    for prefix in only:
        if not any(a.name.startswith(prefix) for a in ATTACKS.values()):
            return (
                f"-k {prefix!r} starts no red-team row's name; `gym redteam --list` lists the rows"
            )
    return (
        "no red-team row matches -k, --family, --kind and --fast together; "
        "`gym redteam --list` with fewer of them lists the rows"
    )


def _progress(bar: Any, row: Any) -> None:
    """A finished row: counted, and named on a line of its own (never markup)."""
    mark = ("held", "green") if row.held else ("gap", "yellow") if row.gap else ("NOT HELD", "red")
    bar.note(Text.assemble(mark, f" {row.name} ", (f"{row.env} {row.seconds:.0f}s", "dim")))
    if not row.held:  # what was seen, at once: a long run may be stopped before its report
        bar.note(Text(f"  {row.observed}", style="dim"))
    bar.advance(**{mark[0].lower(): 1})


def _table(report: Any) -> None:
    table = Table(
        text("row"),
        text("kind"),
        text("env"),
        text("expected"),
        text("observed"),
        text("held"),
        title="gym redteam",
    )
    for row in report.rows:
        held = (
            "[green]yes[/]"
            if row.held
            else f"[yellow]no (gap: {row.gap})[/]"
            if row.gap
            else "[red]NO[/]"
        )
        table.add_row(
            Text(row.name),
            row.kind,
            Text(row.env.removeprefix("boxgym/")),
            Text(row.expected),
            Text(row.observed),
            held,
        )
    print_table(table, console, drop=("kind",))
    console.print(
        f"{sum(r.held for r in report.rows)}/{len(report.rows)} held, "
        f"{len(report.gaps)} known gaps, {len(report.failed)} failed; seed {report.seed}, "
        f"runtime {report.runtime}, {report.seconds:.0f}s"
    )
    for name in report.skipped:
        console.print(f"[dim]skipped: {escape(name)}[/]")
