"""One `gym run` of a run at a time: a second is refused while the first beats, takes a
stale run over, and the first then stops without ending or rewriting what the second does.
Retrying infra errors (``--retry-infra``) still replaces them.
"""

from __future__ import annotations

import time

import pytest
from toy_env import ENV_ID

from gym import OraclePolicy, PolicyError
from gym._run._runner import RunConfig, _run_row, run
from gym._store import LeaseLost, RunBusy, RunOwnerRow, RunStatusRow, Store

OTHER = "host-b:202:7"  # a `gym run` of the same run on another host


@pytest.fixture
def store(tmp_path):
    s = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    yield s
    s.close()


def age_heartbeat(store: Store, run_id: str, seconds: float) -> None:
    with store.session() as s:
        status = s.get(RunStatusRow, run_id)
        assert status is not None
        status.updated_at = time.time() - seconds
        s.add(status)
        s.commit()


def test_a_second_run_is_refused_while_the_first_beats_and_takes_over_once_stale(store):
    config = RunConfig(envs=[ENV_ID], policy="oracle", k=2)
    store.start_run(_run_row(config), planned=4, owner=OTHER)
    with pytest.raises(RunBusy, match="stop it first, or run the same command again once"):
        run(config, store=store, policy_factory=OraclePolicy, concurrency=2)
    assert store.episodes(config.run_id) == []  # refused before any episode ran
    age_heartbeat(store, config.run_id, store.stale_after + 1)  # the other was killed
    state = run(config, store=store, policy_factory=OraclePolicy, concurrency=2)
    assert (state.done, state.passed) == (4, 4)
    assert store.run_status(config.run_id).state == "finished"
    with pytest.raises(LeaseLost):  # the other, should it beat again, learns it lost
        store.heartbeat(config.run_id, owner=OTHER)


def test_a_run_taken_over_stops_and_leaves_the_status_to_the_new_holder(store, monkeypatch):
    import gym._run._runner

    monkeypatch.setattr(gym._run._runner, "HEARTBEAT_S", 0.05)
    config = RunConfig(envs=[ENV_ID], policy="oracle", k=3)

    class TakenOver(OraclePolicy):
        def act(self, messages, tools):
            with store.session() as s:  # another process claims the run (as start_run does)
                s.merge(RunOwnerRow(run_id=config.run_id, owner=OTHER, claimed_at=time.time()))
                s.commit()
            time.sleep(0.3)  # a few beats: the next one is refused
            return super().act(messages, tools)

    with pytest.raises(LeaseLost, match="taken over by another process"):
        run(config, store=store, policy_factory=TakenOver, concurrency=1)
    assert store.episodes(config.run_id) == []  # taken over in its first: nothing committed
    status = store.run_status(config.run_id)
    assert (status.state, status.detail) == ("running", "")  # not ended by the loser


def test_a_commit_refused_after_a_takeover_stops_the_run_as_a_refused_beat(store, monkeypatch):
    """No beat comes before the commit: the commit itself learns the run was taken over."""
    import gym._run._runner

    monkeypatch.setattr(gym._run._runner, "HEARTBEAT_S", 3600)
    config = RunConfig(envs=[ENV_ID], policy="oracle", k=3)
    done: list[str] = []

    class TakenOverAfterOne(OraclePolicy):
        def act(self, messages, tools):
            if store.episodes(config.run_id) and not done:  # the first is committed
                done.append("taken")
                with store.session() as s:
                    s.merge(RunOwnerRow(run_id=config.run_id, owner=OTHER, claimed_at=time.time()))
                    s.commit()
            return super().act(messages, tools)

    with pytest.raises(LeaseLost, match="taken over by another process"):
        run(config, store=store, policy_factory=TakenOverAfterOne, concurrency=1)
    assert len(store.episodes(config.run_id)) == 1  # the one committed before is kept
    status = store.run_status(config.run_id)
    assert (status.state, status.detail) == ("running", "")  # not ended by the loser


class BrokenPolicy(OraclePolicy):
    def act(self, messages, tools):
        raise PolicyError("endpoint down")


def test_retry_infra_replaces_infra_errors_and_a_plain_resume_keeps_them(store):
    config = RunConfig(envs=[ENV_ID], policy="oracle", limit=1)
    run(config, store=store, policy_factory=BrokenPolicy, max_attempts=1)
    assert list(store.episode_outcomes(config.run_id).values()) == ["infra_error"]
    again = run(config, store=store, policy_factory=OraclePolicy)
    assert (again.done, again.skipped) == (0, 1)  # a resume skips what was committed
    retried = run(config, store=store, policy_factory=OraclePolicy, retry_infra=True)
    assert (retried.done, retried.passed, retried.skipped) == (1, 1, 0)
    assert list(store.episode_outcomes(config.run_id).values()) == ["pass"]
    assert len(store.episodes(config.run_id)) == 1
