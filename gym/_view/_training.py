"""Training runs (``gym train``) for the viewer: the list, and one page per training id."""

from __future__ import annotations

from collections.abc import Collection

from pydantic import BaseModel, Field

from gym._reports._plot import wilson
from gym._reports._report import Metric
from gym._store import Store, TrainStepRow
from gym._view._links import plot_name, run_page, train_page

__all__ = ["TrainLink", "TrainPage", "TrainStep", "train_links", "train_view"]


class TrainLink(BaseModel):
    """A training run as the runs page lists it."""

    train_id: str
    href: str
    steps: int
    started: float
    last: float


class TrainStep(BaseModel):
    """One training step as its page shows it."""

    row: TrainStepRow
    run_href: str
    """The page of the run holding the step's episodes ('' when it is out of view)."""
    graded: int
    """Episodes graded (infra errors left out): the n of the intervals."""
    reward: Metric
    """Mean training reward (in [0, 1]) with its 95% Wilson interval, as its plot draws it."""
    hidden_pass: Metric
    """Hidden pass rate with its 95% Wilson interval over the graded episodes."""
    flags: dict[str, Metric] = Field(default_factory=dict)
    """Each flag's rate, with the same kind of interval."""


class TrainPage(BaseModel):
    """Everything a training page shows."""

    train_id: str
    steps: list[TrainStep]
    flag_names: list[str]
    plot: str


def train_links(store: Store, runs: Collection[str] | None) -> list[TrainLink]:
    """Every training run with a step in ``runs`` (all when None), newest first."""
    from sqlmodel import col, func, select

    query = select(
        TrainStepRow.train_id,
        func.count(),
        func.min(TrainStepRow.created_at),
        func.max(TrainStepRow.created_at),
    ).group_by(col(TrainStepRow.train_id))
    if runs is not None:
        query = query.where(col(TrainStepRow.run_id).in_(list(runs)))
    with store.session() as s:
        rows = list(s.exec(query))
    links = [
        TrainLink(train_id=t, href=train_page(t), steps=n, started=lo, last=hi)
        for t, n, lo, hi in rows
    ]
    return sorted(links, key=lambda link: link.last, reverse=True)


def rate(mean: float, n: int) -> Metric:
    """A stored mean in [0, 1] over ``n`` episodes with its 95% Wilson interval.

    The interval `gym._reports._plot.training_figure` draws, so the page and its plot agree (for
    a reward the interval is conservative: docs/statistics.md).
    """
    if n <= 0:
        return Metric(value=mean, lo=float("nan"), hi=float("nan"), interval="wilson")
    lo, hi = wilson(mean, n)
    return Metric(value=mean, lo=lo, hi=hi, interval="wilson")


def _step(row: TrainStepRow, names: list[str], runs: Collection[str] | None) -> TrainStep:
    graded = max(0, row.episodes - row.infra_errors)
    in_view = runs is None or row.run_id in runs
    return TrainStep(
        row=row,
        run_href=run_page(row.run_id) if in_view else "",
        graded=graded,
        reward=rate(row.mean_reward, graded),
        hidden_pass=rate(row.hidden_pass_rate, graded),
        flags={name: rate(row.flag_rates.get(name, 0.0), graded) for name in names},
    )


def train_view(store: Store, train_id: str, runs: Collection[str] | None) -> TrainPage | None:
    """A training run's page data; None when it has no step (in view)."""
    rows = store.train_steps(train_id)
    if not rows or (runs is not None and not any(r.run_id in runs for r in rows)):
        return None
    names = sorted({name for r in rows for name in r.flag_rates})
    return TrainPage(
        train_id=train_id,
        steps=[_step(r, names, runs) for r in rows],
        flag_names=names,
        plot=plot_name("train", train_id),
    )
