"""`gym run` stores nothing for a bad plan; `gym runs` and `gym report` show a run's status;
`gym runs rm` deletes runs (issue 28, defects 2 and 3).

Runs that must be stopped mid-way run the toy family (local sandboxes, no Docker) with a
slowed oracle, through the real `gym` entry point in a child process: signals, exit
codes and what is printed are those a user sees.
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
from toy_cli import TOY_GYM
from typer.testing import CliRunner

from gym._cli import app
from gym._store import EpisodeRow, RunRow, Store

GYM = os.path.join(os.path.dirname(sys.executable), "gym")
TESTS = Path(__file__).resolve().parents[1]


def gym_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [GYM, *args], capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=300
    )


def toy_gym(*args: str, **kwargs) -> subprocess.Popen[str]:
    path = os.pathsep.join([str(TESTS), str(TESTS.parent)])  # the gym of this checkout
    env = {**os.environ, "PYTHONPATH": path, **kwargs.pop("env", {})}
    return subprocess.Popen(
        [sys.executable, "-c", TOY_GYM, *args], env=env, text=True, cwd=TESTS, **kwargs
    )


def run_rows(db: Path) -> list[str]:
    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        try:
            return [r[0] for r in conn.execute("select id from runs")]
        except sqlite3.OperationalError:  # no table: nothing was stored
            return []


def episodes(db: Path) -> int:
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("select count(*) from episodes").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def wait_until(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


# -- defect 2: a bad `gym run` is one line, exit 2, and stores no run --------------------


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--tasks", "nope-task"], "no task 'nope-task' in boxgym/PyFunc-v0"),
        (["--split", "nosplit"], "no environment declares the split 'nosplit'"),
        (["-k", "0"], "-k"),
        (["-k", "-1"], "-k"),
        (["--limit", "0"], "--limit"),
    ],
)
def test_run_with_bad_input_is_one_line_error_and_stores_no_run(tmp_path, args, said):
    """Defect 2: `--tasks nope-task`, `--split nosplit`, `-k 0`, `-k -1`, `--limit 0`
    exited 0, printed nan and stored an empty run (or stored the run, then failed)."""
    db = tmp_path / "runs.db"
    out = gym_cli("run", "boxgym/PyFunc-v0", "--policy", "oracle", "--db", f"sqlite:///{db}", *args)
    assert out.returncode == 2, out.stdout + out.stderr
    assert said in out.stderr and "Traceback" not in out.stderr and "nan" not in out.stdout
    assert run_rows(db) == []


def test_run_with_the_engine_down_is_one_line_error_and_stores_no_run(tmp_path):
    """Defect 2: with DOCKER_HOST at a missing socket the run row was stored before failing."""
    db = tmp_path / "runs.db"
    out = gym_cli(
        *("run", "boxgym/PyFunc-v0", "--policy", "oracle", "--limit", "1"),
        *("--db", f"sqlite:///{db}"),
        env={"DOCKER_HOST": f"unix://{tmp_path}/no.sock"},
    )
    assert out.returncode != 0
    assert "no Docker engine answers" in out.stderr and "Traceback" not in out.stderr
    errors = [line for line in out.stderr.splitlines() if "Docker engine" in line]
    assert len(errors) == 1 and errors[0].startswith("error: "), out.stderr
    assert run_rows(db) == []


# -- defect 3: a run's status in `gym runs` and `gym report` --------------------------------


def test_a_run_stopped_by_ctrl_c_shows_stopped_and_resumed_shows_finished(tmp_path):
    """Defect 3: Ctrl-C mid-run showed "9 episodes, 1.00 [0.66, 1.00]" as if final."""
    db = tmp_path / "runs.db"
    url = f"sqlite:///{db}"
    args = ["run", "toy/Answer-v0", "--policy", "slow-oracle", "-k", "8", "-c", "1"]
    proc = toy_gym(*args, "--db", url, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert wait_until(lambda: episodes(db) >= 2, 120), "two episodes should be stored"
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGINT, stderr
    finish = f"gym run toy/Answer-v0 --policy slow-oracle -k 8 --db {url}"  # issue cli58
    listed = gym_cli("runs", "--db", url, "--json", env={"COLUMNS": "200"})
    (row,) = json.loads(listed.stdout)
    status = row["status"]
    assert (status["state"], status["detail"], status["planned"]) == ("stopped", "Ctrl-C", 16)
    n = status["episodes"]
    assert 2 <= n < 16 and row["episodes"] == n and row["command"] == finish
    assert f"stopped: {n} episodes committed; to finish the run: {finish}\n" in stderr
    table = gym_cli("runs", "--db", url, env={"COLUMNS": "200"})
    assert f"stopped {n}/16" in table.stdout
    assert table.stderr.startswith(f"not finished: {row['id']}; `gym report RUN` says")
    report = gym_cli("report", "--db", url, env={"COLUMNS": "200"})
    first = report.stdout.splitlines()[0]
    assert first.startswith(f"{n} of 16 planned; stopped by Ctrl-C at "), report.stdout
    assert report.stderr.endswith(f"to finish it: {finish}\n"), report.stderr
    as_json = json.loads(gym_cli("report", "--db", url, "--json").stdout)
    assert as_json["status"]["state"] == "stopped" and as_json["status"]["episodes"] == n

    again = toy_gym(*finish.split()[1:], "--json", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout, stderr = again.communicate(timeout=120)
    assert again.returncode == 0, stderr
    assert json.loads(stdout)["status"]["state"] == "finished"
    table = gym_cli("runs", "--db", url, env={"COLUMNS": "200"})
    assert "finished 16/16" in table.stdout
    report = gym_cli("report", "--db", url, env={"COLUMNS": "200"})
    assert "planned" not in report.stdout  # a finished run has no status line
    assert "to finish" not in report.stderr


def test_a_killed_run_shows_running_then_interrupted_once_its_heartbeat_is_old(tmp_path):
    """Defect 3: a run killed with SIGKILL is not "running" for ever."""
    db = tmp_path / "runs.db"
    url = f"sqlite:///{db}"
    args = ["run", "toy/Answer-v0", "--policy", "slow-oracle", "-k", "8", "-c", "1"]
    proc = toy_gym(*args, "--db", url, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_until(lambda: episodes(db) >= 1, 120)
        live = json.loads(gym_cli("runs", "--db", url, "--json").stdout)[0]["status"]
        assert live["state"] == "running" and live["planned"] == 16
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    killed_at = time.time()
    shown = json.loads(gym_cli("runs", "--db", url, "--json").stdout)[0]["status"]
    assert shown["state"] == "running"  # within the default bound (60 s) it may be alive
    time.sleep(max(0.0, killed_at + 1.5 - time.time()))
    old = gym_cli("runs", "--db", url, env={"GYM_RUN_STALE_S": "1", "COLUMNS": "200"})
    assert "interrupted" in old.stdout, old.stdout
    report = gym_cli("report", "--db", url, env={"GYM_RUN_STALE_S": "1", "COLUMNS": "200"})
    assert "planned; interrupted: no heartbeat since" in report.stdout.splitlines()[0]


# -- defect 2: `gym runs rm` -------------------------------------------------------------


def a_run(store: Store, run_id: str, n: int, *, label: str = "", running: bool = False) -> None:
    now = time.time()
    row = RunRow(
        id=run_id,
        created_at=now,
        updated_at=now,
        config={"envs": ["toy/Answer-v0"]},
        policy="oracle",
        boxgym_version="0",
        label=label,
    )
    store.start_run(row, planned=max(n, 1))
    for i in range(n):
        episode = EpisodeRow(
            id=f"{run_id}-{i}",
            run_id=run_id,
            env_id="toy/Answer-v0",
            env_version=0,
            task_id="add",
            split="train",
            sample_index=i,
            seed=i,
            policy="oracle",
            outcome="pass",
            reward=1.0,
        )
        store.commit_episode(episode, [], None)
    if not running:
        store.end_run(run_id, "finished")


@pytest.fixture
def url(tmp_path):
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store = Store(url)
    a_run(store, "aaa111", 2, label="first")
    a_run(store, "aab222", 3)
    a_run(store, "bbb333", 0)
    a_run(store, "ccc444", 0, running=True)
    store.close()
    return url


def cli(*args: str, input: str | None = None):
    return CliRunner().invoke(app, list(args), input=input, env={"COLUMNS": "200"})


def listed(url: str) -> list[str]:
    return sorted(Store(url, read_only=True).run_statuses())


def test_runs_lists_runs_with_their_status_as_a_group_default(url):
    """Defect 2: `gym runs` became a group (`gym runs rm`); plain `gym runs` still lists."""
    out = cli("runs", "--db", url)
    assert out.exit_code == 0, out.output
    assert "finished 2/2" in out.stdout and "running 0/1" in out.stdout
    rows = json.loads(cli("runs", "--db", url, "--json").stdout)
    assert {r["id"]: r["status"]["state"] for r in rows}["ccc444"] == "running"


def test_runs_rm_deletes_a_run_by_unique_prefix(url):
    """Defect 2: there was no way to delete a run."""
    out = cli("runs", "rm", "aab", "--yes", "--db", url)
    assert out.exit_code == 0, out.output
    assert "deleted 1 run (3 episodes" in out.stderr
    assert listed(url) == ["aaa111", "bbb333", "ccc444"]


def test_runs_rm_with_an_ambiguous_prefix_lists_the_candidates(url):
    out = cli("runs", "rm", "aa", "--yes", "--db", url)
    assert out.exit_code != 0
    assert "2 runs matching 'aa'" in str(out.exception)
    assert "aaa111 (first), aab222" in str(out.exception)
    assert len(listed(url)) == 4


def test_runs_rm_empty_deletes_the_runs_without_episodes_but_not_a_running_one(url):
    out = cli("runs", "rm", "--empty", "--yes", "--db", url)
    assert out.exit_code == 0, out.output
    assert listed(url) == ["aaa111", "aab222", "ccc444"]
    assert "no empty run" in cli("runs", "rm", "--empty", "--yes", "--db", url).stderr


def test_runs_rm_refuses_a_running_run_unless_forced(url):
    refused = cli("runs", "rm", "ccc", "--yes", "--db", url)
    assert refused.exit_code != 0 and "running now" in str(refused.exception)
    assert "ccc444" in listed(url)
    forced = cli("runs", "rm", "ccc", "--yes", "--force", "--db", url)
    assert forced.exit_code == 0, forced.output
    assert "ccc444" not in listed(url)


def on_a_terminal(*args: str, answer: str) -> subprocess.CompletedProcess[str]:
    """`gym ARGS` with a terminal for stdin, answering its question with ``answer``."""
    import pty

    main, child = pty.openpty()
    try:
        proc = subprocess.Popen(
            [GYM, *args], stdin=child, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        os.write(main, answer.encode() + b"\n")
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        os.close(main)
        os.close(child)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def test_runs_rm_asks_first_on_a_terminal_and_off_one_wants_yes(url):
    off_terminal = cli("runs", "rm", "aaa", "--db", url)
    assert off_terminal.exit_code != 0 and "add --yes" in str(off_terminal.exception)
    assert "aaa111" in listed(url)
    declined = on_a_terminal("runs", "rm", "aaa", "--db", url, answer="n")
    assert declined.returncode == 1 and "delete 1 run (2 episodes" in declined.stderr
    assert "aaa111" in listed(url)
    confirmed = on_a_terminal("runs", "rm", "aaa", "--db", url, answer="y")
    assert confirmed.returncode == 0, confirmed.stderr
    assert "aaa111" not in listed(url)


def test_runs_rm_on_a_missing_store_creates_none(tmp_path):
    missing = tmp_path / "typo.db"
    out = gym_cli("runs", "rm", "abc", "--yes", "--db", f"sqlite:///{missing}")
    assert out.returncode == 2 and "no run store" in out.stderr
    assert not missing.exists()
