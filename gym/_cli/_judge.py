"""`gym judge calibrate` and `gym judge labels`: measure an LLM judge against labels."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from gym._cli._app import DbOpt, JsonFlag, app, console, err, print_json
from gym._cli._tables import number, print_table, text
from gym._core._errors import ConfigError
from gym._core._json import dumps

__all__: list[str] = []

judge_app = typer.Typer(help="Calibrate the optional LLM judge.", no_args_is_help=True)
app.add_typer(judge_app, name="judge")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


@judge_app.command("calibrate")
def calibrate_cmd(
    labels: Annotated[
        Path | None,
        typer.Option(
            "--labels",
            help="JSONL of {task, answer, label}, pairwise or {task, conversation, step, label}"
            " step items.",
        ),
    ] = None,
    from_run: Annotated[
        str | None,
        typer.Option("--from-run", help="Label with a stored run's verdicts instead."),
    ] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="Judge API root (GYM_JUDGE_BASE_URL).")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="Judge model (GYM_JUDGE_MODEL).")
    ] = None,
    rubric: Annotated[
        Path | None, typer.Option("--rubric", help="A file holding the rubric text.")
    ] = None,
    threshold: Annotated[
        float | None,
        typer.Option("--threshold", min=0.0, max=1.0, help="Pointwise pass threshold (0.5)."),
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Ask the model every time.")] = False,
    db: DbOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Accuracy, Cohen's kappa, order-flip rate and length bias of a judge on labels.

    Answers, pairs and steps of a conversation (the judge's step prompt) each get a row.
    """
    from gym._grading import Judge
    from gym._reports._calibrate import calibrate, labels_from_run, read_labels

    if (labels is None) == (from_run is None):
        raise ConfigError("give exactly one of --labels FILE or --from-run RUN")
    settings: dict[str, Any] = {"base_url": base_url, "model": model, "threshold": threshold}
    if rubric is not None:
        try:
            settings["rubric"] = rubric.read_text()
        except OSError as exc:
            raise ConfigError(f"cannot read the rubric {rubric}: {exc}") from exc
    if no_cache:
        settings["cache"] = False
    judge = Judge.from_env(**settings)
    if judge is None:
        raise ConfigError(
            "no judge: pass --base-url and --model, or set GYM_JUDGE_BASE_URL and GYM_JUDGE_MODEL"
        )
    if labels is not None:
        items: list[Any] = read_labels(labels)
    else:
        from gym._store import Store

        store = Store(db)
        try:
            items = labels_from_run(store, str(from_run))
        finally:
            store.close()
        if not items:
            raise ConfigError(f"run {from_run} has no graded (pass/fail) episodes")
    with judge:
        report = calibrate(judge, items)
    if as_json:
        print_json(report.model_dump(mode="json"))
        return
    table = Table(
        text("mode"),
        *map(number, ("n", "accuracy", "kappa", "order flips", "length corr.", "mean score")),
    )
    if p := report.pointwise:
        table.add_row(
            "pointwise",
            str(p.n),
            _fmt(p.accuracy),
            _fmt(p.kappa),
            "-",
            _fmt(p.length_correlation),
            _fmt(p.mean_score),
        )
    if q := report.pairwise:
        table.add_row(
            "pairwise", str(q.n), _fmt(q.accuracy), _fmt(q.kappa), _fmt(q.flip_rate), "-", "-"
        )
    if st := report.steps:
        table.add_row(
            "step",
            str(st.n),
            _fmt(st.accuracy),
            _fmt(st.kappa),
            "-",
            _fmt(st.length_correlation),
            _fmt(st.mean_score),
        )
    steps = f", steps {report.step_version}" if report.steps else ""
    console.print(
        f"judge {report.judge_version} ({report.model}, prompt v{report.prompt_version}{steps})",
        markup=False,
    )
    print_table(table, console)
    for what, stats in (("answer", report.pointwise), ("step", report.steps)):
        if stats and stats.length_correlation is not None:
            if abs(stats.length_correlation) >= 0.3:
                err.print(
                    f"[yellow]warning:[/] the judge's scores follow {what} length (|r| >= 0.3)"
                )
    if report.pairwise and report.pairwise.flip_rate >= 0.2:
        err.print("[yellow]warning:[/] swapping the order changes 20% or more of its decisions")


@judge_app.command("labels")
def labels_cmd(
    run_id: Annotated[str, typer.Argument(help="Run id (or unique prefix).")],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write here (stdout by default).")
    ] = None,
    db: DbOpt = None,
) -> None:
    """Pointwise labels (JSONL) from a stored run: final answers labelled by its verdicts."""
    from gym._reports._calibrate import labels_from_run
    from gym._store import Store

    store = Store(db)
    try:
        items = labels_from_run(store, run_id)
    finally:
        store.close()
    text = "".join(dumps(i.model_dump()) + "\n" for i in items)
    if out is None:
        sys.stdout.write(text)
    else:
        out.write_text(text)
        err.print(f"wrote {len(items)} labels to {out}", markup=False)
