"""The store's train_steps table: one row per step, a resumed step replaces its row."""

from __future__ import annotations

import time

from gym._store import RunRow, Store, TrainStepRow


def _row(step: int, reward: float, run_id: str = "r") -> TrainStepRow:
    return TrainStepRow(
        train_id="t", step=step, run_id=run_id, created_at=time.time(), mean_reward=reward
    )


def test_train_steps_are_kept_in_order_and_a_step_recorded_again_replaces_its_row(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    run = RunRow(
        id="r", created_at=0.0, updated_at=0.0, config={}, policy="tiny", boxgym_version="x"
    )
    store.ensure_run(run)
    store.add_train_step(_row(1, 0.5, "r"))
    store.add_train_step(_row(0, 0.25, "r"))
    store.add_train_step(_row(1, 0.75, "r"))
    store.add_train_step(TrainStepRow(train_id="other", step=0, run_id="r", created_at=0.0))
    rows = store.train_steps("t")
    assert [(r.step, r.mean_reward) for r in rows] == [(0, 0.25), (1, 0.75)]
    assert store.train_steps("nothing") == []
