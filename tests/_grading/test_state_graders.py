"""File checks and named probes declared by a task, graded in the grading container."""

from __future__ import annotations

import shutil
from pathlib import Path

import gymnasium
import pytest

import gym
from gym import OraclePolicy, ScriptPolicy, ToolCall, run_episode

pytestmark = pytest.mark.docker
SEEDS = Path(__file__).resolve().parents[2] / "seeds"
TASK = "wordstats-top-n"
EXTRA = """
forbidden_tools = ["read_file"]

[[files]]
path = "wordstats/core.py"
contains = "lower()"

[[files]]
path = "NOTES.md"
exists = false

[[probes]]
name = "case-folding"
command = "python3 -c \\"import wordstats; assert wordstats.top_n('A a b', 1) == [('a', 2)]\\""

[[probes]]
name = "no-sleeping"
command = "sleep 100"
timeout = 1
"""


@pytest.fixture
def env(tmp_path):
    task_dir = tmp_path / "pyrepo" / TASK
    shutil.copytree(SEEDS / "pyrepo" / TASK, task_dir)
    spec = (task_dir / "task.toml").read_text()
    head, _, tail = spec.partition("[tags]")
    (task_dir / "task.toml").write_text(head + EXTRA + "\n[tags]" + tail)
    env = gymnasium.make("boxgym/PyRepo-v0", tasks=gym.load_tasks(tmp_path, "pyrepo"))
    yield env
    env.close()


def test_oracle_passes_file_checks_and_probes_except_the_timed_out_one(env):
    result = run_episode(env, OraclePolicy(), task_id=TASK)
    components = result.verdict.components
    assert components["files"].passed and components["probe:case-folding"].passed
    assert not components["probe:no-sleeping"].passed
    assert "timed_out" in components["probe:no-sleeping"].explanation
    assert result.outcome == "fail"


def test_unfixed_code_fails_the_probe_and_a_forbidden_tool_is_flagged(env):
    calls = [ToolCall(name="read_file", arguments={"path": "wordstats/core.py"})]
    result = run_episode(env, ScriptPolicy(calls), task_id=TASK)
    components = result.verdict.components
    assert not components["files"].passed and not components["probe:case-folding"].passed
    assert "forbidden_tool" in {f.name for f in result.verdict.flags}


CLOCK_TEST = """
import time
from datetime import date, datetime


def test_the_clock_is_frozen():
    assert time.time() == 981173106.0
    assert datetime.now().year == 2001 and date.today() == date(2001, 2, 3)
    assert datetime.utcnow() == datetime(2001, 2, 3, 4, 5, 6)
"""


def test_a_task_can_freeze_the_clock_of_the_code_under_test(tmp_path):
    task_dir = tmp_path / "pyrepo" / TASK
    shutil.copytree(SEEDS / "pyrepo" / TASK, task_dir)
    spec = (task_dir / "task.toml").read_text()
    spec = spec.replace("[grading]\n", "[grading]\nfrozen_time = 2001-02-03T04:05:06Z\n")
    assert "frozen_time" in spec
    (task_dir / "task.toml").write_text(spec)
    (task_dir / "hidden" / "test_clock_hidden.py").write_text(CLOCK_TEST)
    env = gymnasium.make("boxgym/PyRepo-v0", tasks=gym.load_tasks(tmp_path, "pyrepo"))
    result = run_episode(env, OraclePolicy(), task_id=TASK)
    assert result.outcome == "pass", result.verdict.components["hidden_tests"].explanation
    assert "5/5 hidden tests passed" in result.verdict.components["hidden_tests"].explanation


BOMBS = {
    "forks": "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
    "memory": "blocks = []\nwhile True:\n    blocks.append(bytearray(64 << 20))\n",
}


@pytest.mark.parametrize("bomb", sorted(BOMBS))
def test_a_probe_that_runs_the_code_holds_it_to_the_workers_limits(tmp_path, bomb):
    """A probe may run the agent's program: a bomb in it is that probe's fail, not the grader's."""
    task_dir = tmp_path / "pyrepo" / TASK
    shutil.copytree(SEEDS / "pyrepo" / TASK, task_dir)
    spec = (task_dir / "task.toml").read_text()
    head, _, tail = spec.partition("[tags]")
    probe = '[[probes]]\nname = "imports"\ncommand = "python3 -c \\"import wordstats\\""\ntimeout = 20\n'
    (task_dir / "task.toml").write_text(head + probe + "\n[tags]" + tail)
    env = gymnasium.make("boxgym/PyRepo-v0", tasks=gym.load_tasks(tmp_path, "pyrepo"))
    try:
        planted = ToolCall(
            name="write_file", arguments={"path": "wordstats/__init__.py", "content": BOMBS[bomb]}
        )
        result = run_episode(env, ScriptPolicy([planted]), task_id=TASK)
    finally:
        env.close()
    assert result.outcome == "fail", result.verdict
    assert not result.verdict.components["probe:imports"].passed
