"""A run's episodes as a list and a task-by-sample grid, and the filters over both."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel, Field

from gym._core._errors import ConfigError
from gym._store import EpisodeRow, Store
from gym._view._links import episode_page

__all__ = ["EpisodeItem", "GridRow", "episode_items", "grid", "item", "select", "task_matches"]

OUTCOMES = ("pass", "fail", "infra_error")


class EpisodeItem(BaseModel):
    """One line of a run's episode list."""

    id: str
    href: str
    env_id: str
    task_id: str
    sample_index: int
    outcome: str
    reward: float | None
    steps: int
    tokens: int
    duration_s: float
    end_reason: str
    flags: list[str] = Field(default_factory=list)
    """Names of the current verdict's flags."""


class GridRow(BaseModel):
    """One task of the task-by-sample grid: its episodes by sample index."""

    env_id: str
    task_id: str
    cells: list[EpisodeItem | None]


def item(e: EpisodeRow, flags: list[str]) -> EpisodeItem:
    """The list line of a stored episode with its flag names."""
    return EpisodeItem(
        id=e.id,
        href=episode_page(e.id),
        env_id=e.env_id,
        task_id=e.task_id,
        sample_index=e.sample_index,
        outcome=e.outcome,
        reward=e.reward,
        steps=e.n_steps,
        tokens=e.prompt_tokens + e.completion_tokens,
        duration_s=e.duration_s,
        end_reason=e.end_reason,
        flags=flags,
    )


def episode_items(store: Store, run_id: str) -> list[EpisodeItem]:
    """Every episode of a run with its current flags, by environment, task and sample."""
    verdicts = store.verdicts(run_id)
    return [
        item(e, [f["name"] for f in verdicts[e.id].flags] if e.id in verdicts else [])
        for e in store.episodes(run_id)
    ]


def task_matches(task_id: str, text: str) -> bool:
    """Whether a task id contains the text, ignoring case (view.js: the same rule)."""
    return text.strip().lower() in task_id.lower()


def _check_flag(items: Sequence[EpisodeItem], flag: str) -> None:
    """Refuse a flag name that no episode here carries (it would silently list nothing)."""
    if flag in ("any", "none"):
        return
    present = sorted({f for i in items for f in i.flags})
    if flag not in present:
        here = ", ".join(present) if present else "none"
        raise ConfigError(f"no flag named {flag!r} in this run; flags here: {here} (or any, none)")


def _flag_matches(flags: Sequence[str], flag: str) -> bool:
    if flag == "any":
        return bool(flags)
    if flag == "none":
        return not flags
    return flag in flags


def select(
    items: Iterable[EpisodeItem],
    *,
    outcome: str | None = None,
    task: str | None = None,
    flag: str | None = None,
) -> list[EpisodeItem]:
    """The episodes that pass every filter given (the browser's filter script does the same).

    Args:
        items: episodes to filter.
        outcome: ``pass``, ``fail`` or ``infra_error``.
        task: text the task id contains, in any case.
        flag: a flag name, ``any`` (some flag) or ``none`` (no flag).

    Raises:
        ConfigError: no episode given carries the flag named.
    """
    items = list(items)
    if flag:
        _check_flag(items, flag)
    return [
        i
        for i in items
        if (not outcome or i.outcome == outcome)
        and (not task or task_matches(i.task_id, task))
        and (not flag or _flag_matches(i.flags, flag))
    ]


def grid(items: Sequence[EpisodeItem]) -> tuple[list[GridRow], int]:
    """Tasks as rows, sample indices as columns; returns the rows and the column count."""
    width = max((i.sample_index for i in items), default=-1) + 1
    rows: dict[tuple[str, str], GridRow] = {}
    for i in items:
        key = (i.env_id, i.task_id)
        row = rows.get(key) or rows.setdefault(
            key, GridRow(env_id=i.env_id, task_id=i.task_id, cells=[None] * width)
        )
        row.cells[i.sample_index] = i
    return list(rows.values()), width
