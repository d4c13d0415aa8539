"""Switches that weaken SQL grading on purpose, for tests only: its class rows must then fail.

Each is a context manager that puts back, for the duration of a test, one behaviour the
SQL grader had before issue 27 (or takes one comparison out), without touching the
shipped code: the runner shipped to the grading container is a changed copy, and
host-side functions are patched. The cached snapshots are dropped on the way in and out,
so that nothing graded one way serves the other.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import gym
from environments.sql import grading
from environments.sql.runner import LIMITS


@contextlib.contextmanager
def _fresh_cache() -> Iterator[None]:
    with grading._snapshots.lock:
        grading._snapshots.items.clear()
    try:
        yield
    finally:
        with grading._snapshots.lock:
            grading._snapshots.items.clear()


@contextlib.contextmanager
def runner_changed(pairs: list[tuple[str, str]]) -> Iterator[None]:
    """The grading runner shipped to the container, with some text replaced (each found)."""
    source = grading.RUNNER_PATH.read_text()
    for old, new in pairs:
        assert old in source, f"runner.py no longer holds {old!r}"
        source = source.replace(old, new)
    with tempfile.TemporaryDirectory() as folder, _fresh_cache():
        path = Path(folder) / "runner.py"
        path.write_text(source)
        with mock.patch.object(grading, "RUNNER_PATH", path):
            yield


def values_converted_in_python() -> contextlib.AbstractContextManager[None]:
    """Dates are converted by Python, as psycopg2 did (it raises on BC or year 10000).

    A BC date's first ten characters are a date Python reads ("0044-03-15 BC"): the
    conversion refuses the era as psycopg2 did, or the attack's BC draw would pass.
    """
    return runner_changed(
        [
            (
                '    if category == "B":\n        return text == "t"\n',
                '    if category == "B":\n        return text == "t"\n'
                '    if category == "D":\n'
                "        dt.date.fromisoformat(text[:10])\n"
                '        if text.endswith(" BC"):\n'
                '            raise ValueError("year is out of range")\n',
            )
        ]
    )


def functions_run_at_restore() -> contextlib.AbstractContextManager[None]:
    """Functions of the final state keep EXECUTE while it is loaded (as before)."""
    return runner_changed([("query_none(conn, LOCK_FUNCTIONS)", "query_none(conn, 'SELECT 1')")])


def whole_rows_in_the_diff() -> contextlib.AbstractContextManager[None]:
    """The runner returns every differing row whole and no bound on the report (as before)."""
    return runner_changed(
        [
            ("PREVIEW_CHARS = 300\n", "PREVIEW_CHARS = 1 << 30\n"),
            ("MAX_REPORT_BYTES = 40 << 20\n", "MAX_REPORT_BYTES = 1 << 40\n"),
            (
                "            self._keep_small(digest, key[:PREVIEW_CHARS])\n",
                "            self.previews[digest] = key\n",
            ),
            (
                '            "previews": {d: previews[d] for d in extra_sample if d in previews},\n',
                '            "previews": previews,\n',
            ),
        ]
    )


@contextlib.contextmanager
def no_bounds_and_export_errors_ours() -> Iterator[None]:
    """No object bounds before the dump, and a failed dump is ours (``infra_error``)."""

    def raise_infra(result: Any) -> str:
        raise gym.GradingError(f"exporting the final state failed: {result.stderr[-300:]}")

    within = grading.WITHIN_SQL
    assert within in grading._EXPORT
    with (
        _fresh_cache(),
        mock.patch.object(grading, "_EXPORT", grading._EXPORT.replace(within, "true")),
        mock.patch.object(grading, "_export_failure", raise_infra),
        mock.patch.object(grading, "over_limits", lambda counts: []),
        mock.patch.dict(LIMITS, dict.fromkeys(LIMITS, 1 << 40)),
    ):
        yield


@contextlib.contextmanager
def restore_text_decides() -> Iterator[None]:
    """A failed restore whose text reads like a fault of ours is ``infra_error`` (as before)."""
    faults = (
        "could not connect to server",
        "connection to server",
        "server closed the connection unexpectedly",
        "terminating connection",
        "the database system is",
        "No space left on device",
        "out of shared memory",
    )
    real = grading._state_failure

    def by_text(report: dict[str, Any]) -> Any:
        if any(f in str(report.get("final_error")) for f in faults):
            raise gym.GradingError(f"a fault of the grading container: {report['final_error']}")
        return real(report)

    with _fresh_cache(), mock.patch.object(grading, "_state_failure", by_text):
        yield


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


@contextlib.contextmanager
def state_not_compared() -> Iterator[None]:
    """Sequences, large objects and roles are left out of the comparison (as before)."""
    with (
        _fresh_cache(),
        mock.patch.object(grading, "_sequence_flags", _nothing),
        mock.patch.object(grading, "_large_object_flags", _nothing),
        mock.patch.object(grading, "role_flags", lambda *a, **k: []),
    ):
        yield


@contextlib.contextmanager
def helper_views_forbidden() -> Iterator[None]:
    """A read task may create nothing at all: a helper view is a write (as before)."""
    with _fresh_cache(), mock.patch.object(grading, "HELPER_KINDS", frozenset()):
        yield


SWITCHES: dict[str, Callable[[], contextlib.AbstractContextManager[None]]] = {
    "values_converted_in_python": values_converted_in_python,
    "functions_run_at_restore": functions_run_at_restore,
    "whole_rows_in_the_diff": whole_rows_in_the_diff,
    "no_bounds_and_export_errors_ours": no_bounds_and_export_errors_ours,
    "restore_text_decides": restore_text_decides,
    "state_not_compared": state_not_compared,
    "helper_views_forbidden": helper_views_forbidden,
}
