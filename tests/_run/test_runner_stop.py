"""Stopping a run: nothing lost, nothing left behind.

`kill -9` of a running `gym run`: its containers go away by themselves within seconds,
with no later run or reaper (checked with a plain engine client that reaps nothing: the
`owned` fixture).
SIGTERM: the run stops scheduling, commits every episode that had finished, removes its
containers and exits within 10 seconds.
Either way the run's status says so: ``stopped`` by SIGTERM, or ``interrupted`` once the
killed run's heartbeat is old (issue 28, defect 3).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gym._store import Store

# Each test runs a real `gym run` (27 s on 2 busy cores, load average near 8): slow, and
# a generous timeout.
pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(300)]

GYM = os.path.join(os.path.dirname(sys.executable), "gym")


def gym_run(db: Path, events: Path, *extra: str) -> subprocess.Popen[bytes]:
    cmd = [GYM, "run", "boxgym/PyFunc-v0", "--policy", "oracle", "--db", f"sqlite:///{db}"]
    cmd += ["--events", str(events), *extra]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def stored(db: Path) -> set[str]:
    try:
        with sqlite3.connect(db) as conn:
            return {r[0] for r in conn.execute("select id from episodes")}
    except sqlite3.OperationalError:
        return set()


def read_events(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def wait_until(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def test_kill_9_of_a_run_leaves_none_of_its_containers(owned, tmp_path):
    db, events = tmp_path / "runs.db", tmp_path / "events.jsonl"
    proc = gym_run(db, events, "--limit", "12", "-c", "3")
    try:
        mid_run = wait_until(lambda: len(stored(db)) >= 1 and owned(proc.pid), 240)
        assert mid_run, "the run should be mid-way, with containers of its own"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stderr.close()
    assert len(stored(db)) < 12, "killed before the end"
    time.sleep(10)
    assert owned(proc.pid) == []
    (status,) = Store(f"sqlite:///{db}", read_only=True, stale_after=5).run_statuses().values()
    assert (status.state, status.planned) == ("interrupted", 12)  # no beat for 10 s: killed


def test_sigterm_commits_every_finished_episode_and_exits_clean(owned, tmp_path):
    db, events = tmp_path / "runs.db", tmp_path / "events.jsonl"
    proc = gym_run(db, events, "--limit", "16", "-c", "3")
    try:
        finished = lambda: [e for e in read_events(events) if e["event"] == "finished"]  # noqa: E731
        assert wait_until(lambda: len(finished()) >= 2, 240), "two episodes should finish"
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        took = time.monotonic() - sent
        stderr = proc.stderr.read().decode()
    finally:
        proc.kill()
        proc.wait()
        proc.stderr.close()
    assert code == 128 + signal.SIGTERM, stderr
    assert took < 10, f"exit took {took:.1f}s"
    done = {e["job"] for e in finished()}
    assert len(done) < 16, "stopped before the end"
    assert done <= stored(db), "every episode reported finished is committed"
    assert {e["job"] for e in read_events(events) if e["event"] == "committed"} == stored(db)
    assert wait_until(lambda: owned(proc.pid) == [], 3)
    (status,) = Store(f"sqlite:///{db}", read_only=True).run_statuses().values()
    assert (status.state, status.detail) == ("stopped", "SIGTERM")
    assert (status.episodes, status.planned) == (len(stored(db)), 16)
