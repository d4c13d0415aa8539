"""Injected faults end as they must, and leave the store and the engine clean.

Each fault of the red-team suite runs here as a test, in its first environment: its
own outcome (infra_error, fail, a resumed run...) and, after it, committed rows
byte-identical, no duplicate episode id, no container of this process left. The
cheap ones not already in the quick subset (test_fast_suite) run by default; all of
them with ``--redteam`` (scripts/redteam.sh runs the suite itself). The daemon restart needs ``GYM_REDTEAM_DESTRUCTIVE=1`` on top: it
restarts the shared Docker engine.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from gym._redteam import registered, run_suite

pytestmark = pytest.mark.docker

CHEAP = {
    "fault.grader[raises]",
    "fault.policy_server[5xx]",
    "fault.host_out_of_memory_in_grading",
}
"""Run by default (container_killed_mid_episode and policy_server[429] are in --fast)."""
FAULTS = sorted(n for n, a in registered().items() if a.kind == "fault")


def marks(name: str) -> list[pytest.MarkDecorator]:
    out = [] if name in CHEAP else [pytest.mark.redteam]
    if registered()[name].destructive:
        destructive = os.environ.get("GYM_REDTEAM_DESTRUCTIVE") == "1"
        out.append(pytest.mark.skipif(not destructive, reason="restarts the shared engine"))
    return out


@pytest.mark.parametrize("name", [pytest.param(n, marks=marks(n)) for n in FAULTS])
def test_fault_ends_as_it_must(engine, name, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    attack = registered()[name]
    report = run_suite(
        names=[name],
        families=[attack.envs[0]],
        kinds=["fault"],
        destructive=attack.destructive,
        concurrency=1,
    )
    (row,) = [r for r in report.rows if r.name == name]
    if row.gap:
        pytest.xfail(f"known gap ({row.gap}): {row.observed}")
    assert row.held, row.observed
    assert not list(tmp_path.glob("boxgym-redteam-store-*")), "the faults' store was left"


STOPPED_WITH_A_CHILD = """
import threading, time
from gym._core._exit import leave
from gym._redteam._faults import _child

def row():
    with _child(["sleep", "60"], stdout=-3, stderr=-3) as proc:  # -3: DEVNULL
        print(proc.pid, flush=True)
        time.sleep(60)

threading.Thread(target=row, daemon=True).start()
time.sleep(1)
leave(143)  # as a SIGTERM ends `gym redteam`: the row's thread never finishes its block
"""


def test_a_fault_rows_child_ends_when_the_suite_is_stopped():
    """A stopped suite must not leave a fault row's `gym run` going on without it."""
    done = subprocess.run(
        [sys.executable, "-c", STOPPED_WITH_A_CHILD], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 143, done.stderr
    child = int(done.stdout.split()[0])
    deadline = time.monotonic() + 5
    while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{child}").exists(), "the child outlived the suite"
