"""`gym run` piped to a file prints its progress while it runs (issue 28, defect 5).

The real `gym` entry point in a child process, its stderr a file (not a terminal, so the
plain mode), read while the process still runs: the toy family (local sandboxes, a
slowed oracle) for the lines and heartbeats, and PyFunc in real containers.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from toy_cli import TOY_GYM

TESTS = Path(__file__).resolve().parents[1]
GYM = os.path.join(os.path.dirname(sys.executable), "gym")


def started(command: list[str], log: Path, **env: str) -> subprocess.Popen[bytes]:
    """The command, its stderr to ``log``, in a plain environment (no forced mode)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("GYM_PROGRESS")}
    with log.open("w") as fh:
        return subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=fh,
            stdin=subprocess.DEVNULL,
            cwd=TESTS,
            env={**base, "PYTHONPATH": str(TESTS), **env},
        )


def seen_while_running(proc: subprocess.Popen[bytes], log: Path, text: str) -> bool:
    """Whether ``text`` appears in the log while the process still runs (polled)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if text in log.read_text():
            return proc.poll() is None
        time.sleep(0.05)
    return False


def test_run_piped_to_a_file_prints_progress_lines_while_it_runs(tmp_path):
    """Defect 5: outside a terminal `gym run` printed nothing until the end; now a line at
    the start, one per episode, a heartbeat while an episode runs, one at the end."""
    log = tmp_path / "stderr.log"
    args = ["run", "toy/Answer-v0", "--policy", "slow-oracle", "-k", "2", "-c", "1"]
    db = ["--db", f"sqlite:///{tmp_path / 'runs.db'}"]
    proc = started(
        [sys.executable, "-c", TOY_GYM, *args, *db],
        log,
        TOY_SLOW_S="0.5",
        GYM_PROGRESS_INTERVAL="0.3",
    )
    try:
        assert seen_while_running(proc, log, "[run] start: 4 episodes"), log.read_text()
        assert seen_while_running(proc, log, "still running: 0/4 episodes · 1 in flight")
        assert seen_while_running(proc, log, "[run] 1/4 episodes · "), log.read_text()
        assert proc.wait(timeout=120) == 0, log.read_text()
    finally:
        proc.kill()
    said = log.read_text().splitlines()
    counts = [line.split(" · ")[0] for line in said if line.startswith("[run] ") and "/4" in line]
    for n in range(1, 5):
        assert f"[run] {n}/4 episodes" in counts, said
    assert any("ETA --" in line for line in said)  # the heartbeat before the first episode
    (end,) = [line for line in said if line.startswith("[run] finished: ")]
    assert end.startswith("[run] finished: 4/4 episodes in ") and end.endswith("pass 4")
    assert said[-1].startswith("open it in the viewer: gym view ")  # after the report


@pytest.mark.docker
def test_run_of_containers_piped_prints_a_line_per_episode_while_it_runs(tmp_path, engine):
    """Defect 5: the same with real containers (PyFunc, the oracle): a line per episode."""
    log = tmp_path / "stderr.log"
    args = ["run", "boxgym/PyFunc-v0", "--policy", "oracle", "--split", "train", "--limit", "3"]
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    proc = started([GYM, *args, "-k", "2", "-c", "1", "--db", db], log)
    try:
        assert seen_while_running(proc, log, "[run] 1/6 episodes · "), log.read_text()
        assert proc.wait(timeout=120) == 0, log.read_text()
    finally:
        proc.kill()
    said = log.read_text()
    assert "[run] start: 6 episodes" in said
    assert all(f"[run] {n}/6 episodes · " in said for n in range(1, 7)), said
    assert "[run] finished: 6/6 episodes in " in said and "pass 6" in said
