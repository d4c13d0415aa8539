"""A run's status as the run page's script polls it (``api/run/RUN/status.json``).

Small on purpose: the script polls it every few seconds while the run is running, and
reloads the changed parts of the page only when ``version`` changes.
"""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel

from gym._store import RunRow, RunStatus, Store
from gym._view._text import clean

__all__ = ["LiveStatus", "POLL_S", "live_status", "version"]

POLL_S = 3
"""Seconds between two polls of a running run's status."""


class LiveStatus(BaseModel):
    """What the run page updates without a reload."""

    run_id: str
    state: str
    """running, stopped, finished, failed or interrupted."""
    live: bool
    """Whether the page should keep polling (the run is running)."""
    planned: int
    """Episodes planned (0: unknown)."""
    episodes: int
    """Episodes stored."""
    passed: int
    failed: int
    infra_error: int
    label: str
    """The badge's text: ``running 9/16``."""
    summary: str
    """One line: ``9 of 16 planned; running (last heartbeat 10:32:05)``."""
    version: str
    """Changes when an episode is stored or the state changes (not on a heartbeat)."""
    poll_s: int = POLL_S


def version(run: RunRow, status: RunStatus) -> str:
    """What changes when the run page's numbers do (a heartbeat alone changes nothing)."""
    return f"{run.updated_at!r}/{status.episodes}/{status.state}"


def live_status(store: Store, run: RunRow) -> LiveStatus:
    """The status of a run in view, every text cleaned (`clean`) for a page to show."""
    status = store.run_status(run.id)
    outcomes = Counter(store.episode_outcomes(run.id).values())
    return LiveStatus(
        run_id=clean(run.id),
        state=status.state,
        live=status.state == "running",
        planned=status.planned,
        episodes=status.episodes,
        passed=outcomes["pass"],
        failed=outcomes["fail"],
        infra_error=outcomes["infra_error"],
        label=clean(status.label()),
        summary=clean(status.summary()),
        version=version(run, status),
    )
