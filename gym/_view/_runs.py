"""The runs, run and comparison pages' data, computed by gym._report's functions."""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from gym._report import Comparison, Report, compare, task_scores
from gym._stats import transitions
from gym._store import RunRow, Store
from gym._view._episodes import OUTCOMES, EpisodeItem, GridRow, episode_items, grid
from gym._view._links import compare_page, plot_name, run_page

__all__ = [
    "ComparePage",
    "RunLink",
    "RunPage",
    "RunsPage",
    "compare_view",
    "run_view",
    "when",
]


def when(ts: float) -> str:
    """A Unix time as UTC, to the minute."""
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


class RunLink(BaseModel):
    """A run as the runs page lists it."""

    run: RunRow
    href: str
    report: Report
    lineage: dict[str, Any] = Field(default_factory=dict)
    """What the run was made from: policy settings, replayed run, boxgym version..."""


class RunsPage(BaseModel):
    """Every run in view, newest first."""

    runs: list[RunLink]
    db: str


class RunPage(BaseModel):
    """Everything the run page shows."""

    run: RunRow
    report: Report
    lineage: dict[str, Any]
    versions: dict[str, list[str]]
    """Grader versions, image digests, hidden-check hashes and boxgym versions in use."""
    items: list[EpisodeItem]
    grid: list[GridRow]
    width: int
    flag_names: list[str]
    outcomes: tuple[str, ...] = OUTCOMES
    plots: list[str]
    compare: list[tuple[str, RunRow]]
    """(page, other run) for each other run in view that ran one of this run's envs."""
    db: str


def lineage(run: RunRow) -> dict[str, Any]:
    """What a run was made from, as short key -> value pairs."""
    config = run.config
    out: dict[str, Any] = {"policy": run.policy, **config.get("policy_params", {})}
    out |= {k: config[k] for k in ("k", "seed", "split", "limit", "tasks") if config.get(k)}
    out["boxgym"] = run.boxgym_version
    return out


def _versions(store: Store, run_id: str) -> dict[str, list[str]]:
    episodes = store.episodes(run_id)
    fields = ("grader_version", "image_digest", "hidden_hash", "boxgym_version")
    counts = {f: Counter(str(getattr(e, f)) for e in episodes if getattr(e, f)) for f in fields}
    return {f: [f"{v} ({n})" for v, n in c.most_common()] for f, c in counts.items()}


def shares_env(a: RunRow, b: RunRow) -> bool:
    """Whether two runs ran at least one environment in common."""
    return bool(set(a.config.get("envs") or ()) & set(b.config.get("envs") or ()))


def pair(a: RunRow, b: RunRow) -> tuple[RunRow, RunRow]:
    """(baseline, candidate): the older run is the baseline."""
    return (a, b) if (a.created_at, a.id) <= (b.created_at, b.id) else (b, a)


def run_view(
    store: Store, run: RunRow, report: Report, others: Sequence[RunRow], db: str
) -> RunPage:
    """The run page's data."""
    items = episode_items(store, run.id)
    rows, width = grid(items)
    pairs = [pair(run, o) for o in others if o.id != run.id and shares_env(run, o)]
    return RunPage(
        run=run,
        report=report,
        lineage=lineage(run),
        versions=_versions(store, run.id),
        items=items,
        grid=rows,
        width=width,
        flag_names=sorted({f for i in items for f in i.flags}),
        plots=[plot_name("pass1", run.id), plot_name("passk", run.id)],
        compare=[(compare_page(a.id, b.id), b if a.id == run.id else a) for a, b in pairs],
        db=db,
    )


class TaskPair(BaseModel):
    """One shared task of a comparison."""

    env_id: str
    task_id: str
    a: float
    b: float
    change: str
    """maintained, improved, regressed or persistent_failure (passing: pass@1 >= 0.5)."""


class ComparePage(BaseModel):
    """Run B against baseline run A."""

    a: RunRow
    b: RunRow
    a_href: str
    b_href: str
    comparison: Comparison | None
    """None when the runs share no graded task (see `problem`)."""
    problem: str = ""
    tasks: list[TaskPair] = Field(default_factory=list)
    plot: str = ""


def _change(a: float, b: float) -> str:
    counts = transitions([a >= 0.5], [b >= 0.5])  # passing as in `compare`: pass@1 >= 0.5
    return next(name for name, n in counts.items() if n)


def _task_pairs(store: Store, a: RunRow, b: RunRow) -> list[TaskPair]:
    sa, sb = task_scores(store, a.id), task_scores(store, b.id)
    rows = [
        TaskPair(env_id=k[0], task_id=k[1], a=sa[k], b=sb[k], change=_change(sa[k], sb[k]))
        for k in sorted(set(sa) & set(sb))
    ]
    order = {"regressed": 0, "improved": 1, "persistent_failure": 2, "maintained": 3}
    return sorted(rows, key=lambda r: order[r.change])


def compare_view(store: Store, a: RunRow, b: RunRow) -> ComparePage:
    """The comparison page's data (`gym compare`'s numbers, per task too)."""
    from gym._errors import ConfigError

    page = ComparePage(a=a, b=b, a_href=run_page(a.id), b_href=run_page(b.id), comparison=None)
    try:
        page.comparison = compare(store, a.id, b.id)
    except ConfigError as exc:
        page.problem = str(exc)
        return page
    page.tasks = _task_pairs(store, a, b)
    page.plot = plot_name("scatter", a.id, b.id)
    return page
