"""Infrastructure failures never become rewards; hidden checks never reach the agent."""

from __future__ import annotations

import contextlib
import json
import secrets
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import gymnasium
import pytest

import gym
from gym import InfraError, OraclePolicy, run_episode
from gym._grading import _checks as code_grading
from gym._sandbox import client, list_boxgym

pytestmark = pytest.mark.docker

SEEDS = Path(__file__).resolve().parents[2] / "seeds"
TASK = "wordstats-top-n"


def test_a_crashing_grader_is_an_infra_error(engine, monkeypatch):
    real = code_grading._runner_spec
    broken = lambda spec: {**real(spec), "test_files": None}  # noqa: E731
    monkeypatch.setattr(code_grading, "_runner_spec", broken)
    result = run_episode(gymnasium.make("boxgym/PyRepo-v0"), OraclePolicy(), task_id=TASK)
    assert result.outcome == "infra_error" and result.reward is None
    assert "runner could not grade" in result.verdict.reason


DYING_GRADER = """
import json, sys, gymnasium
from gym import OraclePolicy, run_episode
from gym._grading import _checks as code_grading
code_grading._BOOT = "import time; time.sleep(30)\\n" + code_grading._BOOT
result = run_episode(gymnasium.make("boxgym/PyRepo-v0"), OraclePolicy(), task_id=sys.argv[1])
print(json.dumps({"outcome": result.outcome, "reward": result.reward,
                  "reason": result.verdict.reason if result.verdict else ""}), flush=True)
"""
"""An episode whose grading waits 30 s before it reads anything, run in a process of its own:
the killer below kills that process's grading containers only (this one's warm pools hold
spares that other tests of this process take later)."""


def test_a_grading_container_that_dies_is_an_infra_error(engine):
    proc = subprocess.Popen(
        [sys.executable, "-c", DYING_GRADER, TASK], stdout=subprocess.PIPE, text=True
    )

    def kill_grading_containers():  # the engine kills the grading container mid-run
        while proc.poll() is None:  # only the episode's process's: the engine is shared
            for c in list_boxgym():
                theirs = c.labels.get("boxgym.owner", "").split(":")[1:2] == [str(proc.pid)]
                if theirs and c.labels.get("boxgym.role") == "grader" and c.state == "running":
                    with contextlib.suppress(Exception):
                        client().api.kill(c.id)
            time.sleep(0.2)

    killer = threading.Thread(target=kill_grading_containers, daemon=True)
    killer.start()
    try:
        out, _ = proc.communicate(timeout=180)
    finally:
        proc.kill()
        killer.join()
    assert proc.returncode == 0, out
    result = json.loads(out.strip().splitlines()[-1])
    assert result["outcome"] == "infra_error" and result["reward"] is None
    assert "ended without a report" in result["reason"]


def test_infra_error_raises_from_step_instead_of_returning_a_reward(engine, monkeypatch):
    monkeypatch.setattr(code_grading, "_runner_spec", lambda spec: {"kind": "nonsense"})
    env = gymnasium.make("boxgym/PyRepo-v0")
    env.reset(options={"task": TASK})
    with pytest.raises(InfraError) as raised:
        env.step({"name": "submit", "arguments": {}})
    assert raised.value.verdict["outcome"] == "infra_error"
    assert raised.value.verdict["reward"] is None
    env.close()


def test_hidden_checks_never_reach_the_agent_container(engine, tmp_path):
    nonce = f"BOXGYM_NONCE_{secrets.token_hex(16)}"
    task_dir = tmp_path / "pyrepo" / TASK
    shutil.copytree(SEEDS / "pyrepo" / TASK, task_dir)
    hidden = task_dir / "hidden" / "test_top_n_hidden.py"
    hidden.write_text(hidden.read_text() + f"\n\ndef test_nonce():\n    assert '{nonce}'\n")
    tasks = gym.load_tasks(tmp_path, "pyrepo")
    env = gymnasium.make("boxgym/PyRepo-v0", tasks=tasks)
    env.reset(options={"task": TASK})
    box = env.unwrapped.sandbox
    grep = f"grep -r -l -s --exclude-dir=proc --exclude-dir=sys {nonce} / ; true"
    for user in (None, "0:0"):  # the agent (its own uid), then root
        assert box.exec(grep, user=user, timeout=120).stdout == ""
    box.exec(f"echo {nonce} > /tmp/control")  # control: grep does find a planted nonce
    assert "/tmp/control" in box.exec(grep, timeout=120).stdout
    box.exec("rm /tmp/control")
    oracle = (task_dir / "oracle" / "wordstats" / "core.py").read_text()
    env.step({"name": "write_file", "arguments": {"path": "wordstats/core.py", "content": oracle}})
    *_, info = env.step({"name": "submit", "arguments": {}})
    verdict = info["verdict"]
    assert verdict["outcome"] == "pass"
    assert "5/5 hidden tests passed" in verdict["components"]["hidden_tests"]["explanation"]
    env.close()
