"""ContainerEnv through Gymnasium.

The contract's logic (tools, malformed actions, budgets, truncation, the terminal
step's verdict and final state, regrading) is tested on the toy family over local
sandboxes, in milliseconds. What is about containment, container lifecycle and real
grading runs on real containers (docker-marked).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import gymnasium
import pytest
import toy_env
from gymnasium.utils.env_checker import check_env
from toy_env import ENV_ID, SUBMIT, bash, write

import gym
import gym.authoring
import gym.errors
from gym import ConfigError, InfraError
from gym._sandbox import client
from gym.errors import TaskNotFound

TASK = "sum-of-digits"
ORACLE = (Path(__file__).parents[2] / "seeds/pyfunc/sum-of-digits/oracle/solution.py").read_text()


@pytest.fixture
def pyfunc(engine):
    env = gymnasium.make("boxgym/PyFunc-v0", exec_timeout=5)
    env.reset(options={"task": TASK})
    yield env
    env.close()


@pytest.fixture
def env():
    env = gymnasium.make(ENV_ID, exec_timeout=1)
    env.reset(options={"task": "add"})
    yield env
    env.close()


# -- real containers: the bundled families, containment, lifecycle ------------------------


@pytest.mark.docker
def test_make_after_import_gym_runs_a_full_episode(pyfunc):
    obs, info = pyfunc.reset(options={"task": TASK})
    assert "digit_sum" in obs and info["task_id"] == TASK
    assert {t["function"]["name"] for t in info["tools"]} == {
        "bash",
        "read_file",
        "write_file",
        "submit",
    }
    obs, reward, terminated, truncated, _ = pyfunc.step(
        {"name": "write_file", "arguments": {"path": "solution.py", "content": ORACLE}}
    )
    assert (reward, terminated, truncated) == (0.0, False, False) and "Wrote" in obs
    obs, reward, terminated, truncated, info = pyfunc.step({"name": "submit", "arguments": {}})
    assert terminated and not truncated and reward == 1.0
    verdict = info["verdict"]
    assert verdict["outcome"] == "pass" and verdict["verified"]
    assert verdict["env_id"] == "boxgym/PyFunc-v0" and verdict["image_digest"].startswith("sha256:")
    assert info["final_state"]["files"] and json.dumps(info)


@pytest.mark.docker
def test_the_episode_container_is_hardened_while_running(pyfunc):
    info = pyfunc.unwrapped.sandbox.inspect()
    host = info["HostConfig"]
    assert host["NetworkMode"] == "none" and host["CapDrop"] == ["ALL"]
    assert "no-new-privileges" in host["SecurityOpt"]
    assert host["PidsLimit"] > 0 and host["Memory"] > 0
    assert info["Config"]["User"].split(":")[0] not in ("", "0", "root")
    assert info["Config"]["Labels"]["boxgym.run"] and info["Config"]["Labels"]["boxgym.owner"]


@pytest.mark.docker
@pytest.mark.parametrize("env_id", [e for e in gym.env_ids() if e.startswith("boxgym/")])
def test_check_env_passes_on_every_registered_env(engine, env_id):
    env = gymnasium.make(env_id)
    try:
        check_env(env.unwrapped, skip_render_check=False)
    finally:
        env.close()


@pytest.mark.docker
def test_a_fork_bomb_becomes_an_observation(pyfunc):
    obs, *_ = pyfunc.step(bash(":(){ :|:& };:; sleep 100"))
    assert "timed out" in obs
    obs, *_ = pyfunc.step(bash("echo alive"))
    assert "alive" in obs


@pytest.mark.docker
def test_a_memory_bomb_becomes_an_observation(engine):
    # A budget of its own, far above the OOM kill's few seconds: with the fork bomb's 5 s, a
    # loaded CI machine read 'timed out' while the kernel was still reclaiming (1 run in ~3).
    env = gymnasium.make("boxgym/PyFunc-v0", exec_timeout=60)
    try:
        env.reset(options={"task": TASK})
        obs, *_ = env.step(bash("python3 -c 'x = bytearray(3 * 2**30)'"))
        assert "out of memory" in obs or "MemoryError" in obs
        obs, *_ = env.step(bash("echo alive"))
        assert "alive" in obs
    finally:
        env.close()


@pytest.mark.docker
def test_a_container_dying_mid_episode_is_an_infra_error(pyfunc):
    client().containers.get(pyfunc.unwrapped.sandbox.container.id).kill()
    with pytest.raises(InfraError) as raised:
        pyfunc.step(bash("true"))
    assert raised.value.verdict["outcome"] == "infra_error"
    assert raised.value.verdict["reward"] is None


@pytest.mark.docker
def test_a_keeper_killed_at_the_memory_limit_is_the_agents_fail(pyfunc):
    """Memory held where no process's resident memory counts it (a memfd), by a process
    set back to ``oom_score_adj`` 0: the kernel kills the keeper, the largest process left,
    and the container is gone. The engine's record says the memory limit did it: the
    agent's fail, not ``infra_error`` as a container killed from outside is (above)."""
    fill = (
        "echo 0 > /proc/self/oom_score_adj; python3 -c 'import os; "
        'os.dup2(os.memfd_create("m", 0), 3); os.execvp("sleep", ["sleep", "600"])\' & '
        "sleep 0.5; head -c 4000M /dev/zero > /proc/$!/fd/3"
    )
    obs, reward, terminated, truncated, info = pyfunc.step(bash(fill))
    assert (terminated, truncated, reward) == (True, False, 0.0)
    assert "memory limit" in obs or "out of memory" in obs
    verdict = info["verdict"]
    assert verdict["outcome"] == "fail"
    assert [f["name"] for f in verdict["flags"]] == ["resource_limit"]
    assert info["end_reason"] == "out_of_memory" and info["final_state"] is None


@pytest.mark.docker
def test_ten_megabytes_of_output_is_capped_by_the_container_shell(pyfunc):
    obs, *_ = pyfunc.step(bash("head -c 10000000 /dev/zero | tr '\\0' x"))
    assert "bytes truncated by boxgym" in obs and len(obs) < 40_000


# -- the contract, on the toy family (local sandboxes, no Docker) -------------------------


def test_check_env_passes_on_the_toy_family():
    env = gymnasium.make(ENV_ID)
    try:
        check_env(env.unwrapped, skip_render_check=False)
    finally:
        env.close()


def test_the_terminal_step_carries_the_verdict_and_the_final_state(env):
    obs, reward, terminated, truncated, info = env.step(write("5\n"))
    assert (reward, terminated, truncated) == (0.0, False, False) and "Wrote" in obs
    obs, reward, terminated, truncated, info = env.step(SUBMIT)
    assert terminated and not truncated and reward == 1.0 and info["end_reason"] == "submit"
    assert info["verdict"]["outcome"] == "pass" and info["verdict"]["verified"]
    assert info["verdict"]["env_id"] == ENV_ID and info["verdict"]["image_digest"] == "local:toy"
    assert info["final_state"]["files"] == {"answer.txt": "NQo="}  # base64 of "5\n"
    json.dumps(info)


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ("this is not a tool call", "not JSON"),
        ({"name": "launch_missiles", "arguments": {}}, "unknown tool 'launch_missiles'"),
        ({"name": "bash", "arguments": {}}, "'command' is required"),
        ({"name": "bash", "arguments": {"command": ["ls"]}}, "valid string"),
        ({"name": "bash", "arguments": "{oops"}, "not JSON"),
    ],
)
def test_malformed_actions_become_observations(env, action, expected):
    obs, reward, terminated, truncated, info = env.step(action)
    assert obs.startswith("Error:") and expected in obs
    assert (reward, terminated, truncated) == (0.0, False, False) and "error" in info


def test_ten_megabytes_of_output_is_capped(env):
    obs, *_ = env.step(bash("head -c 10000000 /dev/zero | tr '\\0' x"))
    assert "bytes truncated by boxgym" in obs and len(obs) < 40_000


def test_binary_output_is_readable_text(env):
    obs, *_ = env.step(bash("head -c 2000 /dev/urandom"))
    assert isinstance(obs, str) and "[exit code: 0]" in obs


def test_paths_outside_the_workspace_are_refused_by_file_tools(env):
    for action in (
        {"name": "read_file", "arguments": {"path": "../../etc/passwd"}},
        {"name": "write_file", "arguments": {"path": "/etc/cron.d/x", "content": "x"}},
    ):
        obs, *_ = env.step(action)
        assert obs.startswith("Error:") and "outside the workspace" in obs


def test_a_write_that_times_out_says_so(env, monkeypatch):
    """Helper Y: a 65 s stall of the agent's container failed a write with an empty reason."""
    from gym._sandbox import ExecResult

    sandbox = env.unwrapped._sandbox()
    monkeypatch.setattr(
        sandbox, "run", lambda *a, **k: ExecResult(exit_code=None, timed_out=True, stderr="")
    )
    obs, *_ = env.step(write("x = 1\n", "solution.py"))
    assert obs.startswith("Error: could not write solution.py") and "did not finish in 1s" in obs


def test_a_command_that_never_ends_times_out(env):
    obs, *_, info = env.step(bash("sleep 1000"))
    assert "timed out" in obs and "[exit code: none]" in obs
    obs, *_ = env.step(bash("echo next"))
    assert "next" in obs


def test_step_limit_truncates_and_still_grades():
    env = gymnasium.make(ENV_ID)
    env.reset(options={"task": "add"})
    env.unwrapped.max_steps = 2  # the environment owns its budgets
    env.step(write("5\n"))
    obs, reward, terminated, truncated, info = env.step(bash("true"))
    assert truncated and not terminated and reward == 1.0 and "[exit code: 0]" in obs
    assert info["verdict"]["outcome"] == "pass" and "step limit" in info["end_reason"]
    assert info["tool"] == "bash" and info["final_state"] is not None
    env.close()


def test_rejected_actions_count_against_the_step_budget():
    env = gymnasium.make(ENV_ID, max_steps=2)
    env.reset(options={"task": "add"})
    env.step("not a call")
    *_, truncated, info = env.step("still not a call")
    assert truncated and info["verdict"]["outcome"] == "fail" and "error" in info
    env.close()


def test_the_time_budget_truncates_and_caps_commands():
    env = gymnasium.make(ENV_ID, max_seconds=1.5, exec_timeout=30)
    env.reset(options={"task": "add"})
    assert env.unwrapped.command_timeout() <= 1.5
    start = time.monotonic()
    obs, reward, terminated, truncated, info = env.step(bash("sleep 20"))
    assert time.monotonic() - start < 10 and "timed out" in obs
    assert truncated and not terminated and "time limit" in info["end_reason"]
    assert info["verdict"]["outcome"] == "fail"
    env.close()


def test_the_registered_budgets_reach_the_environment():
    env = gymnasium.make(ENV_ID)
    assert (env.unwrapped.max_steps, env.unwrapped.max_seconds) == (8, 120)
    assert gym.authoring.env_of(gymnasium.make(ENV_ID, max_steps=3)).max_steps == 3
    env.close()


def test_render_ansi_shows_the_transcript():
    env = gymnasium.make(ENV_ID, render_mode="ansi")
    env.reset(options={"task": "add"})
    env.step(bash("echo rendered"))
    text = env.render()
    assert "# task add" in text and "rendered" in text and '> bash{"command"' in text
    env.close()


def test_close_is_idempotent_and_step_after_the_end_is_an_error(env):
    env.step(SUBMIT)
    with pytest.raises(ConfigError, match="call reset"):
        env.step(bash("true"))
    env.close()
    env.close()


def test_seed_picks_the_task_deterministically_and_unknown_tasks_fail(env):
    first = env.reset(seed=11)[1]["task_id"]
    assert env.reset(seed=11)[1]["task_id"] == first
    with pytest.raises(TaskNotFound, match="no task 'nope'"):
        env.reset(options={"task": "nope"})


def test_a_first_reset_that_fails_leaves_the_environment_usable():
    """Gymnasium's passive checker marked the first reset done before it ran: when it
    raised, every later step failed on the checker's own state (TypeError), through
    `gym serve` too, the steps still running behind the error (helper H)."""
    env = gymnasium.make(ENV_ID)
    try:
        with pytest.raises(TaskNotFound):
            env.reset(options={"task": "nope"})
        env.reset(options={"task": "add"})
        assert env.step(SUBMIT)[2]  # terminated, with its verdict
    finally:
        env.close()


def test_a_new_episode_never_carries_the_previous_final_state(env):
    env.step(SUBMIT)
    assert env.unwrapped.final_state is not None
    with pytest.raises(TaskNotFound):  # a start that fails still drops the old state
        env.reset(options={"task": "nope"})
    assert env.unwrapped.final_state is None and env.unwrapped.last_export is None


def test_info_and_observations_are_json_serialisable(env):
    obs, info = env.reset(options={"task": "add"})
    json.dumps(info)
    _, _, _, _, info = env.step(SUBMIT)
    json.dumps(info)


def test_budgets_can_be_set_through_gymnasium_make():
    env = gymnasium.make(ENV_ID, max_steps=1, max_seconds=120)
    env.reset(options={"task": "add"})
    *_, truncated, info = env.step(bash("true"))
    assert truncated and "verdict" in info and "step limit (1)" in info["end_reason"]
    env.close()


def test_a_gymnasium_time_limit_truncation_is_graded_too():
    env = gymnasium.make(ENV_ID, max_episode_steps=1)
    env.reset(options={"task": "add"})
    *_, truncated, info = env.step(bash("true"))
    assert truncated and info["verdict"]["outcome"] == "fail"
    env.close()


def test_the_spec_of_a_made_env_makes_it_again():
    env = gymnasium.make(ENV_ID)
    again = gymnasium.make(env.spec)
    assert again.spec.id == ENV_ID
    env.close()
    again.close()


def test_the_claimed_success_flag_is_in_the_verdict_the_env_returns(env):
    claim = {**SUBMIT, "content": "I fixed it, all tests pass now."}
    *_, info = env.step(claim)
    verdict = info["verdict"]
    assert verdict["outcome"] == "fail" and not verdict["verified"]
    assert [f["name"] for f in verdict["flags"]] == ["claimed_success"]


def test_regrading_the_stored_final_state_gives_the_same_verdict(env):
    env.step(bash("echo stray > notes.txt"))  # a new file outside the allowed paths: a note
    *_, info = env.step({**SUBMIT, "content": "Done, the task is complete."})
    inner = gym.authoring.env_of(env)
    again = gym.authoring.env_of(gymnasium.make(ENV_ID)).regrade(
        "add", info["final_state"], inner.trace
    )
    assert again.model_dump(mode="json") == info["verdict"]
    assert {f.name for f in again.flags} == {"scratch_file", "claimed_success"}


def test_a_grader_that_raises_is_an_infra_error_with_the_final_state(env, monkeypatch):
    def broken(*args):
        raise RuntimeError("grader bug")

    monkeypatch.setattr(toy_env.ToyEnv, "grade", broken)
    with pytest.raises(InfraError) as raised:
        env.step(SUBMIT)
    assert (
        raised.value.verdict["outcome"] == "infra_error" and raised.value.verdict["reward"] is None
    )
    assert "grader raised RuntimeError" in raised.value.verdict["reason"]
    assert raised.value.final_state is not None


def test_an_export_that_fails_is_an_infra_error(env, monkeypatch):
    def broken(*args):
        raise gym.SandboxError("disk gone")

    monkeypatch.setattr(toy_env.ToyEnv, "export", broken)
    with pytest.raises(InfraError, match="could not export the final state: disk gone"):
        env.step(SUBMIT)


def test_a_family_must_provide_the_whole_contract():
    class Partial(gym.ContainerEnv):
        family = "toy"

        def setup(self, task, sandbox): ...

    with pytest.raises(TypeError, match="abstract"):
        Partial(tasks=toy_env.ToyEnv.load_tasks())


def test_the_deprecated_limits_wrapper_still_limits():
    env = gymnasium.make(ENV_ID, max_steps=None)
    with pytest.warns(DeprecationWarning, match="owns its budgets"):
        limited = gym.authoring.EpisodeLimits(env, max_steps=1)
    limited.reset(options={"task": "add"})
    *_, truncated, info = limited.step(bash("true"))
    assert truncated and "step limit (1)" in info["end_reason"]
    limited.close()


def _setup_fails(error: Exception):
    def broken(self, task, sandbox):
        raise error

    return broken


def test_a_sandbox_that_fails_at_reset_is_an_infra_error_episode(monkeypatch):
    monkeypatch.setattr(
        toy_env.ToyEnv, "setup", _setup_fails(gym.SandboxError("could not write 8 files"))
    )
    result = gym.run_episode(gymnasium.make(ENV_ID), gym.OraclePolicy(), task_id="add", seed=0)
    assert result.outcome == "infra_error" and result.reward is None
    assert "could not write 8 files" in result.end_reason


def test_an_image_failure_at_reset_stops_the_run(monkeypatch):
    monkeypatch.setattr(toy_env.ToyEnv, "setup", _setup_fails(gym.errors.ImageError("build it")))
    with pytest.raises(gym.errors.ImageError, match="build it"):
        gym.run_episode(gymnasium.make(ENV_ID), gym.OraclePolicy(), task_id="add", seed=0)


# -- an action nested 100,000 levels deep -----------------------------------------------------


def _deep(depth: int, leaf: object, wrap) -> object:
    value = leaf
    for _ in range(depth):
        value = wrap(value)
    return value


DEEP_ACTIONS = {
    "dict": {
        "name": "bash",
        "arguments": {"command": "ls", "x": _deep(100_000, 1, lambda v: {"a": v})},
    },
    "json-text": {"name": "bash", "arguments": '{"a":' * 100_000 + "1" + "}" * 100_000},
    "lists": {"name": "bash", "arguments": {"command": _deep(100_000, [], lambda v: [v])}},
    "whole-text": '{"name": "bash", "arguments": ' + "[" * 100_000 + "]" * 100_000 + "}",
}


@pytest.mark.parametrize("form", list(DEEP_ACTIONS))
def test_an_action_nested_100000_levels_deep_is_an_invalid_call(env, form):
    inner = env.unwrapped
    obs, reward, terminated, truncated, info = env.step(DEEP_ACTIONS[form])
    assert obs.startswith("Error:") and "deeper than" in obs and "error" in info
    assert (reward, terminated, truncated) == (0.0, False, False)
    (record,) = inner.trace
    assert record.call is None and record.error
    assert len(json.dumps(record.raw_action)) < 70_000
    record.model_dump_json()  # the trace stays serializable
    obs, *_ = env.step(bash("echo still here"))
    assert "still here" in obs
    _, reward, terminated, _, info = env.step(write("5\n"))
    _, reward, terminated, _, info = env.step(SUBMIT)
    assert terminated and info["verdict"]["outcome"] == "pass"


def test_a_deep_action_counts_against_the_step_budget():
    env = gymnasium.make(ENV_ID, max_steps=2)
    try:
        env.reset(options={"task": "add"})
        env.step(DEEP_ACTIONS["json-text"])
        _, _, terminated, truncated, info = env.step(DEEP_ACTIONS["dict"])
        assert truncated and not terminated and info["verdict"]["outcome"] == "fail"
    finally:
        env.close()
