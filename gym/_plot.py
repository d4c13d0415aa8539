"""Plots of reports, comparisons and training (matplotlib on the Agg backend, imported lazily).

Each ``*_figure`` function returns a matplotlib `Figure` drawn from numbers computed by
`gym._report`; `figure_data` reads back what a figure shows (every series, point and
interval), and `png_bytes` / `save_png` embed that reading in the PNG as a ``boxgym``
text chunk, so a test or a script can check a picture against the report it came from.
Figures are built with the object API, never pyplot, so threads may draw at once.
"""

from __future__ import annotations

import io
import json
import math
import threading
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from gym._report import Metric, Report

__all__ = [
    "TrainingPoint",
    "figure_data",
    "pass_at_1_figure",
    "pass_at_k_figure",
    "png_bytes",
    "report_figure",
    "save_png",
    "scatter_figure",
    "training_figure",
]

_LOCK = threading.Lock()  # matplotlib's font and text caches are shared between threads
_COLOURS = ["#3b6ea8", "#c2562e", "#4f8f3a", "#8a4fa3", "#b08a1e", "#2e8f8f", "#a33b5c"]


class TrainingPoint(BaseModel):
    """One training step's numbers, as the trainer reports them."""

    step: int
    """Optimizer step (or iteration of a rejection-sampling loop)."""
    mean_reward: float
    """Mean reward of the step's graded episodes."""
    pass_rate: float | None = None
    """Share of the step's graded episodes that passed, when known."""
    flag_rates: dict[str, float] = Field(default_factory=dict)
    """Flag name -> share of the step's episodes that carry it."""


def _figure(width: float, height: float, panels: int = 1) -> tuple[Figure, list[Axes]]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(1, panels, i + 1) for i in range(panels)]
    return fig, axes


def _errorbar(ax: Axes, xs: Sequence[float], metrics: Sequence[Metric], **kw: Any) -> None:
    ys = [m.value for m in metrics]
    below = [max(m.value - m.lo, 0.0) if not math.isnan(m.lo) else 0.0 for m in metrics]
    above = [max(m.hi - m.value, 0.0) if not math.isnan(m.hi) else 0.0 for m in metrics]
    ax.errorbar(xs, ys, yerr=[below, above], capsize=4, marker="o", **kw)


def _rate_axis(ax: Axes, title: str, ylabel: str) -> None:
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.set_ylim(-0.05, 1.05)
    ax.grid(axis="y", alpha=0.3)


def _draw_pass_at_1(ax: Axes, report: Report) -> None:
    groups = [*report.envs, report.overall] if len(report.envs) > 1 else report.envs
    names = [g.name.removeprefix("boxgym/") for g in groups]
    _errorbar(ax, range(len(groups)), [g.pass_at_1 for g in groups], label="pass@1", ls="none")
    ax.set_xticks(range(len(groups)), names, rotation=20 if len(names) > 3 else 0)
    ax.set_xlim(-0.6, len(groups) - 0.4)
    _rate_axis(ax, "pass@1 (95% interval)", "pass@1")


def _draw_pass_at_k(ax: Axes, report: Report) -> None:
    for i, g in enumerate(report.envs):
        name, colour = g.name.removeprefix("boxgym/"), _COLOURS[i % len(_COLOURS)]
        ks = [1, *sorted(g.pass_at_k)]
        at_k = [g.pass_at_1, *(g.pass_at_k[k] for k in ks[1:])]
        _errorbar(ax, ks, at_k, label=f"{name} pass@k", color=colour)
        hats = sorted(g.pass_hat_k)
        if len(hats) > 1:
            metrics = [g.pass_hat_k[k] for k in hats]
            _errorbar(ax, hats, metrics, label=f"{name} pass^k", color=colour, ls="--")
    ax.set_xlabel("k")
    ax.xaxis.get_major_locator().set_params(integer=True)  # type: ignore[call-arg]
    ax.legend(fontsize="small")
    _rate_axis(ax, "pass@k (solid) and pass^k (dashed)", "rate")


def pass_at_1_figure(report: Report) -> Figure:
    """pass@1 with its 95% interval for each environment (and all of them together)."""
    fig, (ax,) = _figure(max(4.0, 1.4 * len(report.envs) + 2), 3.6)
    _draw_pass_at_1(ax, report)
    return fig


def pass_at_k_figure(report: Report) -> Figure:
    """pass@k (solid) and pass^k (dashed) against k, per environment, with intervals."""
    fig, (ax,) = _figure(6.0, 3.6)
    _draw_pass_at_k(ax, report)
    return fig


def report_figure(report: Report) -> Figure:
    """A run's report in one picture: pass@1 per environment beside pass@k against k."""
    fig, (left, right) = _figure(max(10.0, 1.4 * len(report.envs) + 7), 4.2, panels=2)
    _draw_pass_at_1(left, report)
    _draw_pass_at_k(right, report)
    return fig


def scatter_figure(
    scores_a: Mapping[tuple[str, str], float],
    scores_b: Mapping[tuple[str, str], float],
    *,
    label_a: str = "A",
    label_b: str = "B",
) -> Figure:
    """Per-task pass@1 of run B against run A on their shared tasks.

    Tasks with the same pair of scores share one point, sized by their count; the
    point's ``urls`` name its tasks (``env task``), so `figure_data` can read them back.
    """
    cells: dict[tuple[float, float], list[str]] = defaultdict(list)
    for key in sorted(set(scores_a) & set(scores_b)):
        cells[(scores_a[key], scores_b[key])].append(f"{key[0]} {key[1]}")
    fig, (ax,) = _figure(4.8, 4.4)
    ax.plot([0, 1], [0, 1], color="#999", lw=1, ls=":", label="_same")
    if cells:
        points = list(cells)
        sizes = [30 + 25 * len(cells[p]) for p in points]
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        dots = ax.scatter(xs, ys, s=sizes, alpha=0.6, label="tasks")
        dots.set_urls([", ".join(cells[p]) for p in points])
        for (x, y), tasks in cells.items():
            if len(tasks) > 1:
                ax.annotate(str(len(tasks)), (x, y), ha="center", va="center", fontsize=8)
    ax.set_xlabel(f"{label_a} pass@1 per task")
    ax.set_ylabel(f"{label_b} pass@1 per task")
    ax.set_xlim(-0.08, 1.08)
    ax.set_ylim(-0.08, 1.08)
    ax.set_title("per task: above the diagonal, B does better")
    return fig


def training_figure(points: Sequence[TrainingPoint]) -> Figure:
    """Mean reward (and pass rate) per training step beside each flag's rate per step."""
    fig, (left, right) = _figure(10.0, 3.8, panels=2)
    steps = [p.step for p in points]
    left.plot(steps, [p.mean_reward for p in points], marker="o", label="mean reward")
    known = [p for p in points if p.pass_rate is not None]
    if known:
        rates = [p.pass_rate or 0.0 for p in known]
        left.plot([p.step for p in known], rates, marker="s", label="pass rate")
    left.set_xlabel("step")
    left.legend(fontsize="small")
    _rate_axis(left, "reward per training step", "reward")
    names = sorted({name for p in points for name in p.flag_rates})
    for name in names:
        right.plot(steps, [p.flag_rates.get(name, 0.0) for p in points], marker=".", label=name)
    right.set_xlabel("step")
    if names:
        right.legend(fontsize="small")
    _rate_axis(right, "flag rate per training step", "share of episodes")
    return fig


def _floats(values: Any) -> list[float]:
    import numpy as np

    return [float(v) for v in np.asarray(values, dtype=float).ravel()]


def _series(label: Any, line: Any, spans: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "label": str(label),
        "x": _floats(line.get_xdata()),
        "y": _floats(line.get_ydata()),
    }
    if spans is not None:
        out["lo"] = [float(s[0][1]) for s in spans]
        out["hi"] = [float(s[1][1]) for s in spans]
    return out


def _axes_data(ax: Axes) -> dict[str, Any]:
    import numpy as np
    from matplotlib.collections import PathCollection
    from matplotlib.container import ErrorbarContainer

    series: list[dict[str, Any]] = []
    drawn: set[int] = set()
    for c in ax.containers:
        if isinstance(c, ErrorbarContainer) and c.lines[0] is not None:
            line, bars = c.lines[0], c.lines[2]
            drawn.add(id(line))
            series.append(_series(c.get_label(), line, bars[0].get_segments() if bars else []))
    for line in ax.get_lines():
        if id(line) not in drawn and not str(line.get_label()).startswith("_"):
            series.append(_series(line.get_label(), line))
    points = [
        {
            "label": str(coll.get_label()),
            "xy": [_floats(xy) for xy in np.asarray(coll.get_offsets())],
            "sizes": _floats(coll.get_sizes()),
            "urls": list(coll.get_urls()),
        }
        for coll in ax.collections
        if isinstance(coll, PathCollection) and not str(coll.get_label()).startswith("_")
    ]
    return {
        "title": ax.get_title(),
        "xlabel": ax.get_xlabel(),
        "ylabel": ax.get_ylabel(),
        "xticklabels": [t.get_text() for t in ax.get_xticklabels()],
        "series": series,
        "points": points,
    }


def figure_data(fig: Figure) -> list[dict[str, Any]]:
    """What each panel of a figure shows: titles, series (x, y, interval), points."""
    return [_axes_data(ax) for ax in fig.axes]


def png_bytes(fig: Figure) -> bytes:
    """The figure as PNG, with `figure_data` in its ``boxgym`` text chunk."""
    data = json.dumps(figure_data(fig), allow_nan=True)
    buf = io.BytesIO()
    with _LOCK:
        fig.savefig(buf, format="png", metadata={"Software": "boxgym", "boxgym": data})
    return buf.getvalue()


def save_png(fig: Figure, path: Path) -> int:
    """Write the figure as a PNG file (see `png_bytes`); returns its size in bytes."""
    data = png_bytes(fig)
    path.write_bytes(data)
    return len(data)
