"""The class rows of the shell and tool-API families (environments/*/attacks.py).

What each row sends is checked here without containers (no declared tool among the
undeclared calls, every call within a call's bounds); with containers, a wall taken down
on purpose makes its row fail. scripts/redteam.sh runs the rows themselves.
"""

from __future__ import annotations

import dataclasses
import random
import re
import time
from typing import Any
from unittest import mock

import pytest

import gym
import gym.grading
from gym._core._tools import parse_call
from gym._envs._env import ContainerEnv, env_of
from gym._redteam._canary import Canaries
from gym._redteam._core import ATTACKS, Context, Names
from gym._redteam._suite import load_builtin

SHELL = "boxgym/Shell-v0"
TOOLAPI = "boxgym/ToolAPI-v0"
BFCL = "boxgym/BFCL-MultiTurn-v0"


def _rows() -> dict[str, Any]:
    load_builtin()
    return {n: a for n, a in ATTACKS.items() if n.startswith(("shell.", "toolapi."))}


def _names(seed: int) -> Names:
    return Names(random.Random(seed))


def _declared(task: gym.Task) -> set[str]:
    return {t["function"]["name"] for t in task.tools}


def test_each_class_has_rows_over_every_task_of_its_environment():
    from environments.shell.attacks import MOVING, ClassRow
    from environments.toolapi.attacks import BFCL_SAMPLE, LookalikeState

    rows = _rows()
    classes = {n.split("[")[0] for n in rows}
    assert classes == {
        "shell.fail_to_infra",
        "shell.manifest_evasion",
        "shell.false_positive.written_otherwise",
        "toolapi.undeclared_calls",
        "toolapi.fail_to_infra",
        "toolapi.lookalike_state",
        "toolapi.integral_floats",
    }
    lookalike = {n for n in rows if n.startswith("toolapi.lookalike_state[")}
    assert all(isinstance(rows[n], LookalikeState) for n in lookalike)
    assert all(isinstance(a, ClassRow) for n, a in rows.items() if n not in lookalike)
    assert all(len(a.envs) == 1 for a in rows.values())
    narrowed = "shell.manifest_evasion[narrowed_modes]"  # only where the gold moves files
    assert rows[narrowed].pool == MOVING and set(MOVING) <= {
        t.id for t in env_of(gym.make(SHELL)).tasks
    }
    everywhere = {n: a for n, a in rows.items() if a.envs[0] in (SHELL, TOOLAPI) and n != narrowed}
    assert all(a.pool == () for a in everywhere.values()), rows
    bfcl = [a for a in rows.values() if a.envs[0] == BFCL]
    assert len(bfcl) == 4 and all(a.pool == BFCL_SAMPLE for a in bfcl)
    ids = {t.id for t in env_of(gym.make(BFCL)).tasks}
    assert set(BFCL_SAMPLE) <= ids


@pytest.mark.parametrize(
    ("env_id", "task_id"),
    [
        (TOOLAPI, "notebook/add-then-list"),
        (TOOLAPI, "notebook/read-only"),
        (BFCL, "BFCL/multi_turn_base_0"),
        (BFCL, "BFCL/multi_turn_base_112"),
    ],
)
def test_the_undeclared_calls_name_no_tool_of_the_task(env_id, task_id):
    from environments.toolapi.attacks import SERVICE_OPS, _undeclared

    env = env_of(gym.make(env_id))
    task = env.task_by_id(task_id)
    declared = _declared(task)
    for seed in range(5):
        calls = _undeclared(_names(seed), task, env)
        assert calls[-1].name == "submit"
        named = [c for c in calls[:-1] if c.name in declared]
        assert len(named) == 1, named  # a tool, with arguments it does not declare
        props = next(t for t in task.tools if t["function"]["name"] == named[0].name)
        assert not set(named[0].arguments) & set(props["function"]["parameters"]["properties"])
        names = {c.name for c in calls}
        assert {"_load_scenario", "__init__", *SERVICE_OPS} - declared <= names
        if task_id == "BFCL/multi_turn_base_0":  # GorillaFileSystem.cp: not one of its tools
            assert "cp" in names


@pytest.mark.parametrize(
    ("env_id", "task_id"), [(TOOLAPI, "notebook/add-then-list"), (BFCL, "BFCL/multi_turn_base_112")]
)
def test_the_breaking_calls_stay_within_what_a_call_may_hold(env_id, task_id):
    from environments.toolapi.attacks import HUGE, LONG, _breakers

    env = env_of(gym.make(env_id))
    task = env.task_by_id(task_id)
    calls = _breakers(_names(1), task, env)
    for call in calls:
        parse_call(call)  # raises when a call is over a bound
    sizes = [sum(len(v) for v in c.arguments.values() if isinstance(v, str)) for c in calls]
    assert max(sizes) >= HUGE
    if "power" in _declared(task):
        assert {"name": "power", "arguments": LONG["power"]} in [
            {"name": c.name, "arguments": c.arguments} for c in calls
        ]


def test_an_output_only_shell_task_fails_when_its_tree_is_over_the_bounds():
    """An answer-only task with 10,000+ files left: never a pass without a flag."""
    env = env_of(gym.make(SHELL))
    task = env.task_by_id("count-errors")
    empty = gym.grading.FileTree()
    replay = gym.grading.GoldReplay(stdout="a 1\n", exit_code=0, initial=empty, final=empty)
    with mock.patch.object(type(env), "replay", lambda self, task: replay):
        state = env.final_state_type(answer="a 1\n", tree=gym.grading.FileTree(over="entries 9"))
        verdict = env.grade(task, state, [])
        clean = env.grade(task, env.final_state_type(answer="a 1\n", tree=empty), [])
    assert verdict.outcome == "fail", verdict
    assert "entries 9" in verdict.components["files"].explanation
    assert clean.outcome == "pass", clean


def test_the_lookalike_row_breaks_when_the_state_check_compares_by_equality():
    """Without containers: a gold state of the row's kinds, the grader weakened to ``==``."""
    from environments.toolapi import ToolAPIEnv
    from environments.toolapi._service import Checkpoint

    state = {"NoteBook": {"__class__": "NoteBook", "open": True, "tags": {"__set__": ["a"]}}}
    name = "toolapi.lookalike_state[ToolAPI-v0]"
    weak = mock.patch("environments.toolapi._grading.same_value", lambda a, b: a == b)

    def gold(self: Any, task: gym.Task, calls: Any) -> list[Checkpoint]:
        return [Checkpoint(state=state, results=[f"r{i}"]) for i in range(len(calls.turns))]

    with mock.patch.object(ToolAPIEnv, "_gold_checkpoints", gold):
        sound = _run(name, TOOLAPI)
        with weak:
            weakened = _run(name, TOOLAPI)
    assert sound.held and "none passed" in sound.observed, sound
    assert "bool as int" in sound.observed and "dict spelled as a tag" in sound.observed
    assert not weakened.held and "passed: ['turn 1" in weakened.observed, weakened


# -- with containers: a wall taken down makes its row fail ----------------------------------


def _run(name: str, env_id: str, **changes: Any) -> Any:
    attack = dataclasses.replace(_rows()[name], **changes)
    with Canaries() as canaries:
        ctx = Context(rng=random.Random(3), canaries=canaries, label="test-class-rows")
        return attack.run(ctx, env_id)


def _shell_only_final_diff(self: Any) -> Any:
    """A freeze that ends the agent's shell (its child of PID 1) and nothing it detached."""
    uid = self.config.exec_uid
    kill = f"ps -eo pid=,ppid=,uid= | awk '$2 == 1 && $3 == {uid} {{print $1}}' | xargs -r kill -9"
    self.exec(["sh", "-c", kill])
    time.sleep(1.0)
    final = self.keeper.listing(list(self.config.tmpfs), time.monotonic() + 120)
    return sorted(self.baseline.diff(final) + self._layer_changes(), key=lambda c: c.path)


@pytest.mark.docker
def test_a_writer_left_alive_makes_the_late_writer_row_fail(engine):
    from gym._sandbox._docker import DockerSandbox

    name = "shell.manifest_evasion[late_writer]"
    assert _run(name, SHELL, pool=("csv-report",)).held
    with mock.patch.object(DockerSandbox, "final_diff", _shell_only_final_diff):
        found = _run(name, SHELL, pool=("csv-report",))
    assert not found.held, found
    assert "csv-report: pass" in found.observed, found


def _host_lets_every_name_through() -> Any:
    """`env.step` hands a call of any name to the family's ``call_tool``, unchecked."""
    real = ContainerEnv._lookup

    def lookup(self: Any, call: gym.ToolCall) -> Any:
        if call.name in self.tools:
            return real(self, call)
        spec = mock.Mock(kind="action", read_args=lambda args: (args, []))
        return spec, lambda **args: self.call_tool(call.name, args)

    return mock.patch.object(ContainerEnv, "_lookup", lookup)


def _service_serves_every_method() -> Any:
    """The service is loaded without the task's list of tools (every public method)."""
    from environments.toolapi import ToolAPIEnv

    real = ToolAPIEnv.backend

    def backend(self: Any, task: gym.Task) -> Any:
        return real(self, task).model_copy(update={"tools": None})

    return mock.patch.object(ToolAPIEnv, "backend", backend)


@pytest.mark.docker
def test_the_undeclared_calls_row_needs_one_wall_and_fails_without_both(engine):
    name, sample = "toolapi.undeclared_calls[BFCL-MultiTurn-v0]", ("BFCL/multi_turn_base_0",)
    with _host_lets_every_name_through():
        one_wall = _run(name, BFCL, pool=sample)
        with _service_serves_every_method():
            no_wall = _run(name, BFCL, pool=sample)
    at_host = re.search(r"(\d+) refused at the host", one_wall.observed)
    assert one_wall.held and at_host and int(at_host.group(1)) <= 1, one_wall
    assert not no_wall.held and "ran:" in no_wall.observed, no_wall
