"""Fixtures of the viewer tests: a store holding two runs (see viewdata.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import viewdata

from gym._store import Store


@pytest.fixture(scope="session")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A SQLite store holding the two runs; yields its URL."""
    path: Path = tmp_path_factory.mktemp("view") / "runs.db"
    url = f"sqlite:///{path}"
    store = Store(url)
    viewdata.fill(store)
    store.close()
    yield url


@pytest.fixture(scope="session")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The two runs, 13 newer runs of SQL, two one-task runs, a run with bidi labels and an
    invalid call, and a training run of three steps; yields its URL."""
    path: Path = tmp_path_factory.mktemp("crowded") / "runs.db"
    url = f"sqlite:///{path}"
    store = Store(url)
    viewdata.fill(store)
    viewdata.add_run(store, viewdata.ONE_A, {"is-prime": "F"}, label="one task, A")
    viewdata.add_run(store, viewdata.ONE_B, {"is-prime": "P"}, label="one task, B")
    viewdata.add_hostile_labels(store, viewdata.HOSTILE_RUN)
    for run_id in viewdata.CROWD:
        viewdata.add_run(store, run_id, {}, env="boxgym/SQL-v0", planned=4)
    viewdata.add_train_steps(store)
    store.close()
    yield url
