"""Benchmark runs: resumable, atomic, crash-safe, and honest about infra errors.

Planning, resuming, retrying, exporting and replaying run on the toy family (local
sandboxes, no Docker); a killed run and the CLI's gate run on real containers.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
from toy_env import ENV_ID

import gym
import gym.errors
from gym import OraclePolicy, Policy, PolicyError
from gym._reports._records import write_records
from gym._reports._report import build_report
from gym._run._runner import RunConfig, plan, run
from gym._sandbox import list_boxgym
from gym._store import Store

GYM = os.path.join(os.path.dirname(sys.executable), "gym")


@pytest.fixture
def store(tmp_path):
    s = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    yield s
    s.close()


def test_episode_ids_are_stable_and_distinct():
    config = RunConfig(envs=["boxgym/PyFunc-v0"], policy="oracle", k=2, limit=3)
    first, again = plan(config), plan(config)
    assert [j.episode_id for j in first] == [j.episode_id for j in again]
    assert len({j.episode_id for j in first}) == 6
    other = RunConfig(envs=["boxgym/PyFunc-v0"], policy="noop", k=2, limit=3)
    assert not {j.episode_id for j in first} & {j.episode_id for j in plan(other)}


def test_a_second_run_of_the_same_config_skips_committed_episodes(store):
    config = RunConfig(envs=[ENV_ID], policy="oracle", k=2)
    state = run(config, store=store, policy_factory=OraclePolicy, concurrency=2)
    assert (state.done, state.passed, state.skipped) == (4, 4, 0)
    again = run(config, store=store, policy_factory=OraclePolicy, concurrency=2)
    assert (again.done, again.skipped) == (0, 4)
    assert len(store.episodes(config.run_id)) == 4
    episode = store.episodes(config.run_id)[0]
    assert episode.image_digest == "local:toy" and episode.grader_version == "1"
    assert episode.export and episode.boxgym_version == gym.__version__


def test_a_run_stopped_midway_is_finished_by_the_next_without_duplicates(store):
    config = RunConfig(envs=[ENV_ID], policy="oracle", k=3)

    class Stop(Exception):
        pass

    def stop_after_two(state):
        if state.done == 2:
            raise Stop

    with pytest.raises(Stop):
        run(
            config, store=store, policy_factory=OraclePolicy, concurrency=1, progress=stop_after_two
        )
    before = {e.id for e in store.episodes(config.run_id)}
    assert len(before) == 2
    state = run(config, store=store, policy_factory=OraclePolicy, concurrency=2)
    after = [e.id for e in store.episodes(config.run_id)]
    assert (state.done, state.skipped) == (4, 2) and len(after) == len(set(after)) == 6
    assert before <= set(after)


class BrokenPolicy(Policy):
    name = "broken"

    def act(self, messages, tools):
        raise PolicyError("endpoint down")


def test_infra_errors_are_retried_then_recorded_never_scored(store):
    config = RunConfig(envs=[ENV_ID], policy="broken", limit=1)
    state = run(config, store=store, policy_factory=BrokenPolicy, max_attempts=2)
    assert (state.infra_error, state.passed, state.failed) == (1, 0, 0)
    (episode,) = store.episodes(config.run_id)
    assert episode.outcome == "infra_error" and episode.reward is None and episode.attempts == 2
    report = build_report(store, config.run_id)
    assert report.overall.infra_error == 1 and report.overall.passed + report.overall.failed == 0


def test_export_refuses_the_eval_split_unless_told(store, tmp_path):
    config = RunConfig(envs=[ENV_ID], policy="oracle", split="eval", limit=1)
    run(config, store=store, policy_factory=OraclePolicy)
    with pytest.raises(gym.errors.StoreError, match="never exported for training"):
        write_records(store, config.run_id, tmp_path / "out.jsonl")
    n = write_records(store, config.run_id, tmp_path / "hf", fmt="hf", allow_eval=True)
    record = json.loads((tmp_path / "hf" / "data.jsonl").read_text().splitlines()[0])
    assert n == 1 and record["split"] == "eval" and record["reward"] == 1.0
    assert record["tool_calls"][-1]["name"] == "submit"


def committed(db: str) -> list[str]:
    try:
        with sqlite3.connect(db) as conn:
            return [r[0] for r in conn.execute("select id from episodes")]
    except sqlite3.OperationalError:
        return []


@pytest.mark.docker
def test_kill_9_mid_run_then_rerun_loses_and_duplicates_nothing(engine, tmp_path):
    db = tmp_path / "runs.db"
    cmd = [
        GYM,
        "run",
        "boxgym/PyFunc-v0",
        "--policy",
        "oracle",
        "--limit",
        "8",
        "-c",
        "2",
        "--db",
        f"sqlite:///{db}",
        "--json",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while len(committed(str(db))) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = committed(str(db))
    assert 2 <= len(before) < 8, "kill the run mid-way"
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    after = committed(str(db))
    assert len(after) == len(set(after)) == 8
    assert set(before) <= set(after)
    summary = json.loads(done.stdout)
    assert summary["envs"]["boxgym/PyFunc-v0"]["pass"] == 8
    assert not [c for c in list_boxgym() if c.labels["boxgym.owner"].split(":")[1] == str(proc.pid)]


def test_replay_policy_replays_a_stored_episode(store):
    config = RunConfig(envs=[ENV_ID], policy="oracle", limit=1)
    run(config, store=store, policy_factory=OraclePolicy)
    from gym._run._replay import ReplayPolicy

    replay = RunConfig(
        envs=[ENV_ID], policy="replay", policy_params={"source": config.run_id}, limit=1
    )
    state = run(
        replay, store=store, policy_factory=lambda: ReplayPolicy(config.run_id, db=store.url)
    )
    assert state.passed == 1


def test_a_replay_of_a_run_without_some_planned_task_stores_nothing(store):
    """It stored a "failed 0/N" run, then said a task was missing (helper H)."""
    from gym._run._executor import NamedPolicy

    source = RunConfig(envs=[ENV_ID], policy="oracle", limit=1)
    run(source, store=store, policy_factory=OraclePolicy)
    params = {"source": source.run_id, "db": store.url}
    replay = RunConfig(envs=[ENV_ID], policy="replay", policy_params=params, limit=2)
    with pytest.raises(gym.ConfigError, match="no episode of 1 of the 2 planned") as got:
        run(replay, store=store, policy_factory=NamedPolicy("replay", params))
    assert "--tasks" in str(got.value)
    assert [r.id for r in store.runs()] == [source.run_id]


@pytest.mark.docker
def test_gate_exits_non_zero_on_a_blocking_rule(engine, tmp_path):
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    out = subprocess.run(
        [GYM, "run", "boxgym/PyFunc-v0", "--policy", "noop", "--limit", "2", "--db", db, "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    run_id = json.loads(out.stdout)["run_id"]
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\nkind = "min_pass_rate"\nvalue = 0.5\n')
    gate = subprocess.run(
        [GYM, "gate", run_id, "--rules", str(rules), "--db", db], capture_output=True, text=True
    )
    assert gate.returncode == 1 and "FAIL min_pass_rate" in gate.stdout
    rules.write_text('[[rule]]\nkind = "max_infra_rate"\nvalue = 0.0\n')
    ok = subprocess.run(
        [GYM, "gate", run_id, "--rules", str(rules), "--db", db], capture_output=True, text=True
    )
    assert ok.returncode == 0, ok.stdout


def test_a_runtime_changes_the_run_id_only_when_set(monkeypatch, tmp_path):
    import hashlib

    plain = RunConfig(envs=["boxgym/PyFunc-v0"], policy="oracle", limit=3)
    before = {k: v for k, v in plain.model_dump(mode="json").items() if k != "runtime"}
    assert (
        plain.run_id == hashlib.sha256(json.dumps(before, sort_keys=True).encode()).hexdigest()[:16]
    )
    gvisor = plain.model_copy(update={"runtime": "runsc"})
    assert gvisor.run_id != plain.run_id
    monkeypatch.delenv("GYM_RUNTIME", raising=False)
    with pytest.raises(gym.ConfigError, match="runtime"):
        run(gvisor, store=Store(f"sqlite:///{tmp_path / 'r.db'}"), policy_factory=OraclePolicy)


def test_the_stored_conversation_keeps_each_turns_reasoning():
    from gym._run._runner import with_reasoning

    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "a1"},
        {"role": "tool", "content": "o1"},
        {"role": "assistant", "content": "a2"},
    ]
    turns = [
        gym.policies.Turn(message=messages[2], reasoning="think 1"),
        gym.policies.Turn(message=messages[4]),
    ]
    stored = with_reasoning(messages, turns)
    assert stored[2] == {"role": "assistant", "content": "a1", "reasoning": "think 1"}
    assert stored[4] == messages[4] and "reasoning" not in messages[2]


# -- issue 28: nothing stored for a bad plan (defect 2); a run has a status (defect 3) -------


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"tasks": ["nope-task"]}, r"no task 'nope-task' in toy/Answer-v0 \(2 tasks"),
        ({"tasks": ["ad"]}, "no task 'ad' .*did you mean: add"),
        ({"split": "nosplit"}, "no environment declares the split 'nosplit'"),
        ({"k": 0}, "k .* must be at least 1, not 0"),
        ({"k": -1}, "k .* must be at least 1, not -1"),
        ({"limit": 0}, "limit .* must be at least 1, not 0"),
        ({"tasks": ["greet"], "split": "train"}, "nothing to run: no task of toy/Answer-v0"),
    ],
)
def test_a_bad_plan_is_an_error_and_stores_no_run(store, bad, message):
    """Defect 2: unknown tasks, an unknown split, k or limit below 1, an empty plan."""
    config = RunConfig(envs=[ENV_ID], policy="oracle", **bad)
    with pytest.raises(gym.ConfigError, match=message):
        run(config, store=store, policy_factory=OraclePolicy)
    assert store.runs() == [] and store.run_statuses() == {}


def test_an_image_that_cannot_be_had_stores_no_run(store, monkeypatch):
    """Defect 2: the sandboxes are reached (engine, image) before anything is stored."""
    import toy_env

    def no_image(name):
        raise gym.errors.ImageError(f"image {name} is not built")

    monkeypatch.setattr(toy_env.LOCAL, "image", no_image)
    config = RunConfig(envs=[ENV_ID], policy="oracle")
    with pytest.raises(gym.errors.ImageError, match="image toy is not built"):
        run(config, store=store, policy_factory=OraclePolicy)
    assert store.runs() == []


def test_a_run_is_running_while_it_goes_and_finished_at_its_end(store):
    """Defect 3: the planned count and the state are stored as the run goes."""
    config = RunConfig(envs=[ENV_ID], policy="oracle", k=2)
    seen = []
    run(
        config,
        store=store,
        policy_factory=OraclePolicy,
        concurrency=1,
        progress=lambda state: seen.append(store.run_status(config.run_id).label()),
    )
    assert seen == ["running 1/4", "running 2/4", "running 3/4", "running 4/4"]
    status = store.run_status(config.run_id)
    assert (status.state, status.detail, status.label()) == ("finished", "", "finished 4/4")
    assert build_report(store, config.run_id).status == status


class Stop(threading.Event):
    """A stop event that knows who asked (as the CLI's signal handler does)."""

    reason = "SIGTERM"


def test_a_stopped_run_says_who_stopped_it_and_its_resume_finishes_it(store):
    """Defect 3: stopped mid-way it is "stopped 2/6 by SIGTERM", not final figures."""
    config = RunConfig(envs=[ENV_ID], policy="oracle", k=3)
    stop = Stop()

    def stop_after_two(state):
        if state.done == 2:
            stop.set()

    state = run(
        config,
        store=store,
        policy_factory=OraclePolicy,
        concurrency=1,
        stop=stop,
        progress=stop_after_two,
    )
    status = store.run_status(config.run_id)
    assert state.stopped and (status.state, status.detail) == ("stopped", "SIGTERM")
    assert status.summary().startswith(f"{status.episodes} of 6 planned; stopped by SIGTERM at ")
    assert 2 <= status.episodes < 6
    run(config, store=store, policy_factory=OraclePolicy, concurrency=2)
    assert store.run_status(config.run_id).label() == "finished 6/6"


@pytest.mark.parametrize(
    ("raised", "state", "detail"),
    [
        (KeyboardInterrupt(), "stopped", "Ctrl-C"),
        (SystemExit(128 + signal.SIGTERM), "stopped", "SIGTERM"),  # a signal on Ray
        (SystemExit(128 + signal.SIGINT), "stopped", "Ctrl-C"),
        (RuntimeError("disk full\nmore lines"), "failed", "error: disk full"),
    ],
)
def test_a_run_ended_by_an_exception_records_how(store, raised, state, detail):
    """Defect 3: Ctrl-C, a signal's exit (Ray runs leave this way) or an error."""
    config = RunConfig(envs=[ENV_ID], policy="oracle", k=2)

    def end(progress):
        raise raised

    with pytest.raises(type(raised)):
        run(config, store=store, policy_factory=OraclePolicy, concurrency=1, progress=end)
    status = store.run_status(config.run_id)
    assert (status.state, status.detail, status.episodes, status.planned) == (state, detail, 1, 4)


def test_the_heartbeat_beats_while_an_episode_runs(store, monkeypatch):
    """Defect 3: a long episode does not make a live run look interrupted."""
    import gym._run._runner

    monkeypatch.setattr(gym._run._runner, "HEARTBEAT_S", 0.05)
    config = RunConfig(envs=[ENV_ID], policy="slow-oracle", limit=1)
    beats = []

    class SlowOracle(OraclePolicy):
        def act(self, messages, tools):
            beats.append(store.run_status(config.run_id).updated_at)
            time.sleep(0.4)
            beats.append(store.run_status(config.run_id).updated_at)
            return super().act(messages, tools)

    run(config, store=store, policy_factory=SlowOracle, concurrency=1)
    assert all(later > earlier for earlier, later in zip(beats[::2], beats[1::2], strict=True))
