"""How a run ends: finished once every episode it was to run is committed.

A stop (Ctrl-C, SIGTERM) that comes when every episode is already in flight stops
nothing: they finish, are committed, and the run is finished, not "stopped 3/3" with
nothing left to run. Shown on the toy family and on real containers (PyFunc, noop).
"""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest
from toy_env import ENV_ID

from gym import NoopPolicy, OraclePolicy
from gym._run._executor import LocalExecutor
from gym._run._runner import RunConfig, end_state, run
from gym._store import Store


class Stop(threading.Event):
    """A stop event that knows who asked (as the CLI's signal handler does)."""

    reason = "Ctrl-C"


@pytest.fixture
def store(tmp_path):
    s = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    yield s
    s.close()


@pytest.mark.parametrize(
    ("left", "stopped_by", "ended"),
    [
        (0, None, ("finished", "")),
        (0, "Ctrl-C", ("finished", "")),  # asked after the last episode started
        (2, "SIGTERM", ("stopped", "SIGTERM")),
        (2, None, ("stopped", "2 episodes not run")),  # an executor that left some
    ],
)
def test_the_end_state_follows_what_is_left_not_whether_a_stop_was_asked(left, stopped_by, ended):
    assert end_state(left, stopped_by) == ended


def stopped_once_all_in_flight(
    config: RunConfig, store: Store, policy, n: int
) -> tuple[LocalExecutor, list[str], object]:
    """Run ``config`` with ``n`` at once; the stop comes as the ``n``-th episode starts."""
    stop, events = Stop(), []

    def on(event):
        events.append(event["event"])
        if events.count("scheduled") == n:
            stop.set()

    executor = LocalExecutor(n, stop=stop, events=on, grace=120)
    state = run(config, store=store, policy_factory=policy, executor=executor, events=on)
    return executor, events, state


def test_a_stop_when_every_episode_is_in_flight_ends_finished(store):
    config = RunConfig(envs=[ENV_ID], policy="oracle", k=2)  # 4 episodes
    executor, events, state = stopped_once_all_in_flight(config, store, OraclePolicy, 4)
    assert executor.stopped and "stopping" in events  # the stop was seen
    assert not state.stopped and state.done == 4 and events[-1] == "done"
    status = store.run_status(config.run_id)
    assert (status.state, status.detail, status.label()) == ("finished", "", "finished 4/4")


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_late_stop_of_a_real_run_ends_finished_with_nothing_lost_or_left(engine, tmp_path):
    db = tmp_path / "runs.db"
    store = Store(f"sqlite:///{db}")
    config = RunConfig(envs=["boxgym/PyFunc-v0"], policy="noop", limit=3)
    try:
        executor, events, state = stopped_once_all_in_flight(config, store, NoopPolicy, 3)
        status = store.run_status(config.run_id)
    finally:
        store.close()
    assert executor.stopped and not state.stopped and state.done == 3
    assert (status.state, status.label()) == ("finished", "finished 3/3")
    with sqlite3.connect(db) as conn:
        rows = [r[0] for r in conn.execute("select id from episodes")]
    assert len(rows) == len(set(rows)) == 3  # nothing lost, no duplicates
    # no container made for this run left, running or not (a grader's may be "removing"
    # still); spares of the process's warm pools (``boxgym.run=pool``) stay by design
    deadline = time.monotonic() + 5
    while ours(config.run_id) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ours(config.run_id) == []


def ours(run_id: str) -> list[str]:
    """Containers (running or not) labelled with a run, listed by a bare Docker client."""
    import docker

    plain = docker.from_env()
    try:
        rows = plain.api.containers(all=True, filters={"label": f"boxgym.run={run_id}"})
        return [r["Id"] for r in rows]
    finally:
        plain.close()
