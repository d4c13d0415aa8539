"""The runs, run and comparison pages' data, computed by gym._reports._report's functions."""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from gym._reports._report import Comparison, Report, compare, task_scores
from gym._reports._stats import transitions
from gym._store import RunRow, RunStatus, Store
from gym._view._episodes import OUTCOMES, EpisodeItem, GridRow, episode_items, grid
from gym._view._links import compare_page, plot_name, run_page, search_api, status_api
from gym._view._live import version

__all__ = [
    "ComparePage",
    "RunLink",
    "RunPage",
    "RunsPage",
    "compare_choices",
    "compare_view",
    "run_plots",
    "run_view",
    "when",
]

MAX_COMPARE = 12
"""Comparison links per run page: the most recent other runs that share an environment."""


def when(ts: float) -> str:
    """A Unix time as UTC, to the minute."""
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


class RunLink(BaseModel):
    """A run as the runs page lists it."""

    run: RunRow
    href: str
    report: Report
    status: RunStatus
    lineage: dict[str, Any] = Field(default_factory=dict)
    """What the run was made from: policy settings, replayed run, boxgym version..."""


class RunsPage(BaseModel):
    """Every run in view, newest first."""

    runs: list[RunLink]
    trainings: list[Any] = Field(default_factory=list)
    """`gym._view._training.TrainLink` of each training run in view."""
    db: str


class RunPage(BaseModel):
    """Everything the run page shows."""

    run: RunRow
    report: Report
    status: RunStatus
    status_url: str
    """Where the page's script polls the run's status (served pages only)."""
    search_url: str
    """Where the page's script asks which episodes match a search (served pages only)."""
    version: str
    """`gym._view._live.version` of the run as shown: the script reloads when it changes."""
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
    """(page, other run) for the latest `MAX_COMPARE` other runs in view that ran one of
    this run's envs."""
    more_compare: int = 0
    """Other runs that share an environment beyond those linked."""
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


def run_plots(run_id: str, report: Report) -> list[str]:
    """The plots of a run's page (none before its first graded episode: nothing to draw)."""
    if not report.overall.passed + report.overall.failed:
        return []
    return [plot_name("pass1", run_id), plot_name("passk", run_id)]


def compare_choices(run: RunRow, others: Sequence[RunRow]) -> list[RunRow]:
    """The other runs a run can be compared with (sharing an environment), in order."""
    return [o for o in others if o.id != run.id and shares_env(run, o)]


def run_view(
    store: Store, run: RunRow, report: Report, others: Sequence[RunRow], db: str
) -> RunPage:
    """The run page's data (``others``: the other runs in view, newest first)."""
    items = episode_items(store, run.id)
    rows, width = grid(items)
    choices = compare_choices(run, others)
    pairs = [pair(run, o) for o in choices[:MAX_COMPARE]]
    status = store.run_status(run.id)
    return RunPage(
        run=run,
        report=report,
        status=status,
        status_url=status_api(run.id),
        search_url=search_api(run.id),
        version=version(run, status),
        lineage=lineage(run),
        versions=_versions(store, run.id),
        items=items,
        grid=rows,
        width=width,
        flag_names=sorted({f for i in items for f in i.flags}),
        plots=run_plots(run.id, report),
        compare=[(compare_page(a.id, b.id), b if a.id == run.id else a) for a, b in pairs],
        more_compare=max(0, len(choices) - MAX_COMPARE),
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
    a_episodes: list[EpisodeItem] = Field(default_factory=list)
    """The task's episodes in A (each links to its page and carries its flags)."""
    b_episodes: list[EpisodeItem] = Field(default_factory=list)
    """The task's episodes in B."""


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
    flags: list[tuple[str, int, int]] = Field(default_factory=list)
    """(flag, episodes of A carrying it, episodes of B carrying it) over the shared tasks."""
    plot: str = ""


def _change(a: float, b: float) -> str:
    counts = transitions([a >= 0.5], [b >= 0.5])  # passing as in `compare`: pass@1 >= 0.5
    return next(name for name, n in counts.items() if n)


def _by_task(store: Store, run_id: str) -> dict[tuple[str, str], list[EpisodeItem]]:
    out: dict[tuple[str, str], list[EpisodeItem]] = {}
    for i in episode_items(store, run_id):
        out.setdefault((i.env_id, i.task_id), []).append(i)
    return out


def _task_pairs(store: Store, a: RunRow, b: RunRow) -> list[TaskPair]:
    sa, sb = task_scores(store, a.id), task_scores(store, b.id)
    ea, eb = _by_task(store, a.id), _by_task(store, b.id)
    rows = [
        TaskPair(
            env_id=k[0],
            task_id=k[1],
            a=sa[k],
            b=sb[k],
            change=_change(sa[k], sb[k]),
            a_episodes=ea.get(k, []),
            b_episodes=eb.get(k, []),
        )
        for k in sorted(set(sa) & set(sb))
    ]
    order = {"regressed": 0, "improved": 1, "persistent_failure": 2, "maintained": 3}
    return sorted(rows, key=lambda r: order[r.change])


def _flag_counts(tasks: Sequence[TaskPair]) -> list[tuple[str, int, int]]:
    in_a = Counter(f for t in tasks for e in t.a_episodes for f in e.flags)
    in_b = Counter(f for t in tasks for e in t.b_episodes for f in e.flags)
    return [(name, in_a[name], in_b[name]) for name in sorted(in_a.keys() | in_b.keys())]


def compare_view(store: Store, a: RunRow, b: RunRow) -> ComparePage:
    """The comparison page's data (`gym compare`'s numbers, per task too)."""
    from gym._core._errors import ConfigError

    page = ComparePage(a=a, b=b, a_href=run_page(a.id), b_href=run_page(b.id), comparison=None)
    try:
        page.comparison = compare(store, a.id, b.id)
    except ConfigError as exc:
        page.problem = str(exc)
        return page
    page.tasks = _task_pairs(store, a, b)
    page.flags = _flag_counts(page.tasks)
    page.plot = plot_name("scatter", a.id, b.id)
    return page
