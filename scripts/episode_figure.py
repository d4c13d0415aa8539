"""Draw docs/episode.svg: one episode's data flow, and which process computes what.

    .venv/bin/python scripts/episode_figure.py [OUT.svg]

docs/architecture.md ("One episode") shows the figure and numbers the same steps. The
output is deterministic (no date, no creator, a fixed hash salt) and keeps its text as
text, so tests/test_docs_structure.py can check that the figure names the processes the
page names.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("svg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "docs" / "episode.svg"

HOST = "#eef3fb"  # processes of the machine that runs `gym run` (or a Ray worker)
CONTAINER = "#fdf1e4"  # containers
REMOTE = "#eef7ee"  # services reached over the network
EDGE = "#3d4a5c"


@dataclass(frozen=True)
class Box:
    """One process (or place) of the figure."""

    x: float
    y: float
    w: float
    h: float
    title: str
    lines: tuple[str, ...]
    color: str
    dashed: bool = False


POLICY = Box(
    0.3,
    6.0,
    3.4,
    2.3,
    "policy",
    (
        "a Policy object in the env process;",
        "its model runs locally or behind",
        "an OpenAI-compatible server",
    ),
    HOST,
)
ENV = Box(
    5.3,
    4.6,
    4.4,
    3.7,
    "env process (gym run, or a Ray worker)",
    (
        "the runner: one job per episode",
        "ContainerEnv.step: parses the action,",
        "counts the budget, calls the tool",
        "export: takes the final state out",
        "grade: the verdict, where the agent",
        "never was (+ claim flags, lineage)",
    ),
    HOST,
)
AGENT = Box(
    10.9,
    5.3,
    3.8,
    3.0,
    "agent container",
    (
        "the keeper (pid 1): the persistent",
        "shell; the agent's commands as",
        "the agent's uid",
        "lists and hashes the writable mounts",
        "once the agent's processes end",
    ),
    CONTAINER,
)
GRADING = Box(
    10.9,
    0.4,
    3.8,
    3.5,
    "grading container",
    (
        "fresh, from the pristine image, no",
        "network; its grading script (root):",
        "code: a checker runs the hidden",
        "checks, a worker imports the code",
        "SQL, Support: gold replay, snapshots",
        "writes one JSON report",
    ),
    CONTAINER,
)
JUDGE = Box(
    5.6,
    0.4,
    3.6,
    1.7,
    "LLM judge (optional)",
    ("gym.grading.Judge, cached; a model", "behind an OpenAI-compatible API"),
    REMOTE,
    dashed=True,
)
STORE = Box(
    0.3,
    0.4,
    3.4,
    2.6,
    "store",
    (
        "SQLite or PostgreSQL: the run,",
        "each episode, its steps, final",
        "state and verdict, committed",
        "at once",
    ),
    HOST,
)


def draw_box(ax: plt.Axes, box: Box) -> None:
    """A rounded box: the title in bold, then its lines."""
    ax.add_patch(
        FancyBboxPatch(
            (box.x, box.y),
            box.w,
            box.h,
            boxstyle="round,pad=0.02,rounding_size=0.15",
            facecolor=box.color,
            edgecolor=EDGE,
            linewidth=1.2,
            linestyle=(0, (4, 3)) if box.dashed else "-",
        )
    )
    top = box.y + box.h - 0.32
    ax.text(box.x + 0.18, top, box.title, fontsize=10.5, fontweight="bold", va="center")
    for n, line in enumerate(box.lines):
        ax.text(box.x + 0.18, top - 0.42 - 0.37 * n, line, fontsize=8.6, va="center")


def arrow(
    ax: plt.Axes,
    start: tuple[float, float],
    end: tuple[float, float],
    label: str,
    *,
    at: tuple[float, float],
    bend: float = 0.0,
) -> None:
    """An arrow from ``start`` to ``end``, its label on a white patch at ``at``."""
    ax.add_patch(
        FancyArrowPatch(
            start,
            end,
            arrowstyle="-|>",
            mutation_scale=12,
            color=EDGE,
            linewidth=1.1,
            connectionstyle=f"arc3,rad={bend}",
        )
    )
    ax.text(
        *at,
        label,
        fontsize=8.3,
        ha="center",
        va="center",
        bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "none"},
    )


def figure() -> plt.Figure:
    """The whole figure: six boxes, the numbered steps between them."""
    fig, ax = plt.subplots(figsize=(12.5, 7.4))
    ax.set_xlim(0, 15)
    ax.set_ylim(0, 8.9)
    ax.axis("off")
    for box in (POLICY, ENV, AGENT, GRADING, JUDGE, STORE):
        draw_box(ax, box)
    arrow(ax, (ENV.x, 7.8), (POLICY.x + POLICY.w, 7.8), "1 observation", at=(4.5, 8.05))
    arrow(ax, (POLICY.x + POLICY.w, 6.6), (ENV.x, 6.6), "2 action:\na tool call", at=(4.5, 7.05))
    arrow(ax, (ENV.x + ENV.w, 7.8), (AGENT.x, 7.8), "3 a command", at=(10.3, 8.05))
    arrow(ax, (AGENT.x, 7.0), (ENV.x + ENV.w, 7.0), "its output", at=(10.3, 7.25))
    arrow(ax, (AGENT.x, 5.8), (ENV.x + ENV.w, 5.8), "4 export:\nthe final state", at=(10.3, 6.25))
    arrow(
        ax,
        (ENV.x + ENV.w, 4.9),
        (GRADING.x + 0.5, GRADING.y + GRADING.h),
        "5 pristine files,\nfinal state,\nhidden checks",
        at=(10.45, 4.55),
    )
    arrow(ax, (GRADING.x, 1.6), (ENV.x + ENV.w - 0.4, ENV.y), "its report", at=(9.95, 2.45))
    arrow(ax, (7.0, ENV.y), (7.0, JUDGE.y + JUDGE.h), "6 prompt", at=(6.55, 3.3))
    arrow(ax, (7.9, JUDGE.y + JUDGE.h), (7.9, ENV.y), "score", at=(8.3, 3.3))
    arrow(
        ax,
        (ENV.x + 0.4, ENV.y),
        (STORE.x + STORE.w, 2.3),
        "7 the episode and\nits verdict (one\ncommit)",
        at=(4.35, 3.75),
    )
    ax.text(
        0.3,
        8.65,
        "One episode of `gym run`. Blue: processes on the host; orange: containers;"
        " green: a service over the network",
        fontsize=9.5,
        style="italic",
    )
    fig.tight_layout(pad=0.3)
    return fig


def main(argv: list[str]) -> int:
    """Write the figure to ``argv[0]`` (docs/episode.svg by default)."""
    out = Path(argv[0]) if argv else OUT
    plt.rcParams["svg.hashsalt"] = "boxgym-episode"
    plt.rcParams["svg.fonttype"] = "none"  # text stays text: readable, searchable, small
    fig = figure()
    fig.savefig(out, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
