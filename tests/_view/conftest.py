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


CROWD = [f"s{i:02d}sqlrun000{i:02d}" for i in range(13)]
"""13 runs of another environment, newer than the two runs (issue 28, defect 4)."""
ONE_A, ONE_B = "c0onetask0000a", "d0onetask0000b"
"""Two runs sharing one task only: the paired difference has no interval (defect 8)."""
HOSTILE_RUN = "h0bidi00000003"
TRAIN = "t0train0000001"


def _train_steps(store: Store) -> None:
    from gym._store import TrainStepRow

    for step, (reward, hidden) in enumerate([(0.1, 0.25), (0.3, 0.5), (0.6, 0.75)]):
        store.add_train_step(
            TrainStepRow(
                train_id=TRAIN,
                step=step,
                run_id=viewdata.RUN_A,
                created_at=viewdata.time.time() + step,
                episodes=9,
                infra_errors=1,
                mean_reward=reward,
                hidden_pass_rate=hidden,
                flag_rates={"tests_touched": 0.125 * (2 - step)},
                loss=0.5 - 0.1 * step,
            )
        )


@pytest.fixture(scope="session")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The two runs, 13 newer runs of SQL, two one-task runs, a run with bidi labels and an
    invalid call, and a training run of three steps; yields its URL."""
    path: Path = tmp_path_factory.mktemp("crowded") / "runs.db"
    url = f"sqlite:///{path}"
    store = Store(url)
    viewdata.fill(store)
    viewdata.add_run(store, ONE_A, {"is-prime": "F"}, label="one task, A")
    viewdata.add_run(store, ONE_B, {"is-prime": "P"}, label="one task, B")
    viewdata.add_hostile_labels(store, HOSTILE_RUN)
    for run_id in CROWD:
        viewdata.add_run(store, run_id, {}, env="boxgym/SQL-v0", planned=4)
    _train_steps(store)
    store.close()
    yield url
