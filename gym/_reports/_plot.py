"""Plots of reports, comparisons and training (matplotlib on the Agg backend, imported lazily).

Each ``*_figure`` function returns a matplotlib `Figure` drawn from numbers computed by
`gym._reports._report`; `figure_data` reads back what a figure shows (every series, point,
interval, band, axis range and title), and `save` / `png_bytes` embed that reading in
the file (a PNG's ``boxgym`` text chunk, an SVG's or PDF's description), so a test or
a script can check a picture against the report it came from. Rates are drawn on
[0, 1] always; pass@k and pass^k differ in colour, marker and line style; steps and k
are integers. Figures are built with the object API, never pyplot, so threads may draw
at once.
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

from gym._core._errors import ConfigError
from gym._core._text import clean

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from gym._reports._report import Group, Metric, Report

__all__ = [
    "FORMATS",
    "TrainingPoint",
    "figure_data",
    "pass_at_1_figure",
    "pass_at_k_figure",
    "plot_format",
    "png_bytes",
    "report_figure",
    "save",
    "save_png",
    "scatter_figure",
    "training_figure",
    "wilson",
]

FORMATS = ("png", "svg", "pdf")
"""File formats a plot is written in, named by the file's extension."""

_LOCK = threading.Lock()  # matplotlib's font and text caches are shared between threads
_COLOURS = ["#3b6ea8", "#c2562e", "#4f8f3a", "#8a4fa3", "#b08a1e", "#2e8f8f", "#a33b5c"]
_MARKERS = ["o", "s", "^", "D", "v", "P", "X"]
_AT_K = {"cmap": "Blues", "marker": "o", "ls": "-"}
"""pass@k: blues, circles, solid lines."""
_HAT_K = {"cmap": "Oranges", "marker": "s", "ls": "--"}
"""pass^k: oranges, squares, dashed lines."""
_MARGIN = 0.05
"""Rates are drawn on [0 - margin, 1 + margin]."""


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
    episodes: int = 0
    """Graded episodes the means are over (0: unknown, no interval drawn)."""


def plot_format(path: Path) -> str:
    """The format a plot is written in: the file's extension (png, svg or pdf).

    Raises:
        ConfigError: any other extension (checked before any work is done).
    """
    ext = path.suffix.lower().removeprefix(".")
    if ext not in FORMATS:
        allowed = ", ".join(f".{f}" for f in FORMATS[:-1]) + f" or .{FORMATS[-1]}"
        raise ConfigError(f"--plot {path}: the extension names the format: {allowed}")
    return ext


def wilson(p: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a mean ``p`` in [0, 1] over ``n`` episodes.

    For a 0/1 outcome it is the Wilson interval of a proportion; for a reward in [0, 1]
    the variance p(1 - p) is the largest a mean ``p`` can have, so the interval is
    conservative (docs/statistics.md). ``n`` of 0 gives (nan, nan).
    """
    if n <= 0:
        return math.nan, math.nan
    p = min(max(p, 0.0), 1.0)
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(centre - half, 0.0), min(centre + half, 1.0)


def _figure(width: float, height: float, panels: int = 1) -> tuple[Figure, list[Axes]]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(1, panels, i + 1) for i in range(panels)]
    return fig, axes


def _literal(text: str, limit: int = 80) -> str:
    """Text as matplotlib shows it literally (``$`` starts no formula), cut to ``limit``."""
    text = " ".join(clean(text).split())
    text = text if len(text) <= limit else text[: limit - 1] + "\N{HORIZONTAL ELLIPSIS}"
    return text.replace("$", r"\$")


def _suptitle(fig: Figure, report: Report) -> None:
    label = getattr(report, "label", "")
    fig.suptitle(_literal(f"run {report.run_id}" + (f" \N{MIDDLE DOT} {label}" if label else "")))


def _ci(m: Metric) -> str:
    return f"{m.value:.2f} [{m.lo:.2f}, {m.hi:.2f}]"


def _errorbar(ax: Axes, xs: Sequence[float], metrics: Sequence[Metric], **kw: Any) -> None:
    ys = [m.value for m in metrics]
    below = [max(m.value - m.lo, 0.0) if not math.isnan(m.lo) else 0.0 for m in metrics]
    above = [max(m.hi - m.value, 0.0) if not math.isnan(m.hi) else 0.0 for m in metrics]
    ax.errorbar(xs, ys, yerr=[below, above], capsize=4, marker=kw.pop("marker", "o"), **kw)


def _rate_axis(ax: Axes, title: str, ylabel: str) -> None:
    ax.set_title(title, fontsize="medium")
    ax.set_ylabel(ylabel)
    ax.set_ylim(-_MARGIN, 1 + _MARGIN)
    ax.grid(axis="y", alpha=0.3)


def _integer_axis(ax: Axes, values: Sequence[float], label: str) -> None:
    """An x axis of whole numbers (steps, k) with half a step of room on each side."""
    from matplotlib.ticker import MaxNLocator

    ax.set_xlabel(label)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    if values:
        ax.set_xlim(min(values) - 0.5, max(values) + 0.5)


def _draw_pass_at_1(ax: Axes, report: Report) -> None:
    groups = [*report.envs, report.overall] if len(report.envs) > 1 else report.envs
    names = [g.name.removeprefix("boxgym/") for g in groups]
    metrics = [g.pass_at_1 for g in groups]
    _errorbar(ax, range(len(groups)), metrics, label="pass@1", ls="none", color=_COLOURS[0])
    for x, m in enumerate(metrics):
        ax.annotate(
            _ci(m),
            (x, m.value),
            xytext=(8, 0),
            textcoords="offset points",
            va="center",
            fontsize="small",
        )
    ax.set_xticks(range(len(groups)), names, rotation=20 if len(names) > 3 else 0)
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.set_xlabel("environment")
    _rate_axis(ax, "pass@1 with its 95% interval", "pass@1 (share of tasks, 0-1)")


def _shades(cmap: str, n: int) -> list[Any]:
    from matplotlib import colormaps

    return [colormaps[cmap](0.85 - 0.45 * i / max(n - 1, 1)) for i in range(n)]


def _draw_k_curves(ax: Axes, g: Group, name: str, at_k: Any, hat_k: Any) -> list[int]:
    """One environment's pass@k and pass^k against k; the k values drawn."""
    ks = [1, *sorted(g.pass_at_k)]
    metrics = [g.pass_at_1, *(g.pass_at_k[k] for k in ks[1:])]
    _errorbar(
        ax, ks, metrics, label=f"{name} pass@k", color=at_k, marker=_AT_K["marker"], ls=_AT_K["ls"]
    )
    hats = sorted(g.pass_hat_k)
    if len(hats) > 1:
        _errorbar(
            ax,
            hats,
            [g.pass_hat_k[k] for k in hats],
            label=f"{name} pass^k",
            color=hat_k,
            marker=_HAT_K["marker"],
            ls=_HAT_K["ls"],
            mfc="white",
        )
    return ks


def _draw_pass_at_k(ax: Axes, report: Report) -> None:
    envs = report.envs
    at_k, hat_k = _shades(_AT_K["cmap"], len(envs)), _shades(_HAT_K["cmap"], len(envs))
    ks: list[int] = [1]
    for i, g in enumerate(envs):
        ks = _draw_k_curves(ax, g, g.name.removeprefix("boxgym/"), at_k[i], hat_k[i])
    if len(ks) == 1 and len(envs) == 1:  # k = 1: one point, said in words
        m = envs[0].pass_at_1
        ax.annotate(
            f"pass@1 = {_ci(m)}",
            (1, m.value),
            xytext=(10, 0),
            textcoords="offset points",
            va="center",
            fontsize="small",
        )
        ax.text(
            0.5,
            0.02,
            "one sample per task: `gym run -k N` draws pass@k and pass^k",
            transform=ax.transAxes,
            ha="center",
            fontsize="x-small",
            color="#666",
        )
    _integer_axis(ax, [k for g in envs for k in [1, *g.pass_at_k]], "k (samples per task)")
    if envs:
        ax.legend(fontsize="small")
    _rate_axis(ax, "pass@k (solid, circles) and pass^k (dashed, squares)", "rate (0-1)")


def pass_at_1_figure(report: Report) -> Figure:
    """pass@1 with its 95% interval for each environment (and all of them together)."""
    fig, (ax,) = _figure(max(5.0, 1.8 * len(report.envs) + 3), 3.8)
    _draw_pass_at_1(ax, report)
    _suptitle(fig, report)
    return fig


def pass_at_k_figure(report: Report) -> Figure:
    """pass@k and pass^k against k, per environment, with intervals."""
    fig, (ax,) = _figure(6.0, 3.8)
    _draw_pass_at_k(ax, report)
    _suptitle(fig, report)
    return fig


def report_figure(report: Report) -> Figure:
    """A run's report in one picture: pass@1 per environment beside pass@k against k."""
    fig, (left, right) = _figure(max(10.0, 1.8 * len(report.envs) + 7), 4.2, panels=2)
    _draw_pass_at_1(left, report)
    _draw_pass_at_k(right, report)
    _suptitle(fig, report)
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
    ax.set_xlabel(_literal(f"{label_a} pass@1 per task"))
    ax.set_ylabel(_literal(f"{label_b} pass@1 per task"))
    ax.set_xlim(-0.08, 1.08)
    ax.set_ylim(-0.08, 1.08)
    ax.set_title("per task: above the diagonal, B does better")
    return fig


def _band(ax: Axes, points: Sequence[TrainingPoint], rates: Sequence[float], **kw: Any) -> None:
    """A line of rates per step with its 95% Wilson band (where the episodes are known)."""
    steps = [p.step for p in points]
    ax.plot(steps, rates, **kw)
    with_n = [(p.step, *wilson(r, p.episodes)) for p, r in zip(points, rates, strict=True)]
    with_n = [row for row in with_n if not math.isnan(row[1])]
    if with_n:
        xs, lo, hi = zip(*with_n, strict=True)
        ax.fill_between(xs, lo, hi, color=kw["color"], alpha=0.2, lw=0, label=f"{kw['label']} 95%")


def _draw_reward(ax: Axes, points: Sequence[TrainingPoint]) -> None:
    rewards = [p.mean_reward for p in points]
    _band(ax, points, rewards, marker="o", color=_COLOURS[0], label="mean reward")
    known = [p for p in points if p.pass_rate is not None]
    if known:
        rates = [p.pass_rate or 0.0 for p in known]
        _band(ax, known, rates, marker="s", ls="--", color=_COLOURS[1], label="pass rate")
    _integer_axis(ax, [p.step for p in points], "training step")
    ax.legend(fontsize="small")
    _rate_axis(ax, "reward per step, 95% Wilson interval", "mean over the step's episodes (0-1)")


def _draw_flags(ax: Axes, points: Sequence[TrainingPoint]) -> None:
    steps = [p.step for p in points]
    names = sorted({name for p in points for name in p.flag_rates})
    for i, name in enumerate(names):
        rates = [p.flag_rates.get(name, 0.0) for p in points]
        colour, marker = _COLOURS[i % len(_COLOURS)], _MARKERS[i % len(_MARKERS)]
        ax.plot(steps, rates, label=name, color=colour, marker=marker)
    _integer_axis(ax, steps, "training step")
    if names:
        ax.legend(fontsize="small")
    _rate_axis(ax, "flag rate per step", "share of the step's episodes (0-1)")


def training_figure(points: Sequence[TrainingPoint], *, title: str = "") -> Figure:
    """Mean reward (and hidden pass rate) per step, with 95% intervals, beside flag rates.

    Args:
        points: one per training step.
        title: the figure's title (the CLI gives ``train TRAIN_ID``).
    """
    fig, (left, right) = _figure(10.0, 4.0, panels=2)
    _draw_reward(left, points)
    _draw_flags(right, points)
    if title:
        fig.suptitle(_literal(title))
    return fig


def _floats(values: Any) -> list[float]:
    import numpy as np

    return [float(v) for v in np.asarray(values, dtype=float).ravel()]


def _colour(value: Any) -> str:
    from matplotlib.colors import to_hex

    return str(to_hex(value))


def _series(label: Any, line: Any, spans: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "label": str(label),
        "x": _floats(line.get_xdata()),
        "y": _floats(line.get_ydata()),
        "color": _colour(line.get_color()),
        "marker": str(line.get_marker()),
        "linestyle": str(line.get_linestyle()),
    }
    if spans is not None:  # a point with no value (no episode graded) has no bar
        out["lo"] = [float(s[0][1]) if len(s) else math.nan for s in spans]
        out["hi"] = [float(s[1][1]) if len(s) else math.nan for s in spans]
    return out


def _band_data(coll: Any) -> dict[str, Any]:
    """A ``fill_between`` band: its outline runs forward along ``lo``, back along ``hi``."""
    vertices = coll.get_paths()[0].vertices
    n = (len(vertices) - 3) // 2
    lo, hi = vertices[1 : n + 1], vertices[n + 2 : 2 * n + 2][::-1]
    return {
        "label": str(coll.get_label()),
        "x": _floats(lo[:, 0]),
        "lo": _floats(lo[:, 1]),
        "hi": _floats(hi[:, 1]),
        "color": _colour(coll.get_facecolor()[0]),
    }


def _all_series(ax: Axes) -> list[dict[str, Any]]:
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
    return series


def _axes_data(ax: Axes) -> dict[str, Any]:
    import numpy as np
    from matplotlib.collections import FillBetweenPolyCollection, PathCollection

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
    bands = [_band_data(c) for c in ax.collections if isinstance(c, FillBetweenPolyCollection)]
    left, right = ax.get_xlim()
    suptitle = ax.figure.get_suptitle().replace(r"\$", "$") if ax.figure else ""
    return {
        "suptitle": suptitle,
        "title": ax.get_title(),
        "xlabel": ax.get_xlabel(),
        "ylabel": ax.get_ylabel(),
        "xlim": _floats(ax.get_xlim()),
        "ylim": _floats(ax.get_ylim()),
        "xticks": [t for t in _floats(ax.get_xticks()) if left <= t <= right],
        "xticklabels": [t.get_text() for t in ax.get_xticklabels()],
        "series": _all_series(ax),
        "bands": bands,
        "points": points,
        "texts": [t.get_text() for t in ax.texts],
    }


def figure_data(fig: Figure) -> list[dict[str, Any]]:
    """What each panel of a figure shows: titles, axes, series (x, y, interval), bands."""
    return [_axes_data(ax) for ax in fig.axes]


def _metadata(fig: Figure, fmt: str) -> dict[str, Any]:
    """`figure_data` as the file's own metadata: a PNG text chunk, an SVG/PDF description."""
    data = json.dumps(figure_data(fig), allow_nan=True)
    title = fig.get_suptitle()
    if fmt == "png":
        return {"Software": "boxgym", "boxgym": data}
    if fmt == "svg":
        return {"Title": title, "Description": data, "Date": None}
    return {"Title": title, "Subject": data, "Creator": "boxgym"}


def _render(fig: Figure, fmt: str) -> bytes:
    buf = io.BytesIO()
    with _LOCK:
        fig.savefig(buf, format=fmt, metadata=_metadata(fig, fmt))
    return buf.getvalue()


def png_bytes(fig: Figure) -> bytes:
    """The figure as PNG, with `figure_data` in its ``boxgym`` text chunk."""
    return _render(fig, "png")


def save(fig: Figure, path: Path) -> int:
    """Write the figure in the format of the path's extension (`plot_format`); its size.

    Raises:
        ConfigError: an extension other than .png, .svg or .pdf.
    """
    data = _render(fig, plot_format(path))
    path.parent.mkdir(parents=True, exist_ok=True)  # as every --out: the folder is made
    path.write_bytes(data)
    return len(data)


def save_png(fig: Figure, path: Path) -> int:
    """Write the figure as a PNG file (see `png_bytes`); returns its size in bytes."""
    data = png_bytes(fig)
    path.write_bytes(data)
    return len(data)
