"""ContainerEnv through Gymnasium, on real containers."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

import gym
from gym import ConfigError, InfraError, TaskNotFound
from gym._sandbox import client

pytestmark = pytest.mark.docker

TASK = "sum-of-digits"
ORACLE = (
    Path(__file__).parent.parent / "seeds/pyfunc/sum-of-digits/oracle/solution.py"
).read_text()


@pytest.fixture
def env(engine):
    env = gymnasium.make("boxgym/PyFunc-v0", exec_timeout=5)
    env.reset(options={"task": TASK})
    yield env
    env.close()


def bash(command: str) -> dict:
    return {"name": "bash", "arguments": {"command": command}}


def test_make_after_import_gym_runs_a_full_episode(env):
    obs, info = env.reset(options={"task": TASK})
    assert "digit_sum" in obs and info["task_id"] == TASK
    assert {t["function"]["name"] for t in info["tools"]} == {
        "bash",
        "read_file",
        "write_file",
        "submit",
    }
    obs, reward, terminated, truncated, _ = env.step(
        {"name": "write_file", "arguments": {"path": "solution.py", "content": ORACLE}}
    )
    assert (reward, terminated, truncated) == (0.0, False, False) and "Wrote" in obs
    obs, reward, terminated, truncated, info = env.step({"name": "submit", "arguments": {}})
    assert terminated and not truncated and reward == 1.0
    verdict = info["verdict"]
    assert verdict["outcome"] == "pass" and verdict["verified"]
    assert verdict["env_id"] == "boxgym/PyFunc-v0" and verdict["image_digest"].startswith("sha256:")


def test_the_episode_container_is_hardened_while_running(env):
    info = env.unwrapped.sandbox.inspect()
    host = info["HostConfig"]
    assert host["NetworkMode"] == "none" and host["CapDrop"] == ["ALL"]
    assert "no-new-privileges" in host["SecurityOpt"]
    assert host["PidsLimit"] > 0 and host["Memory"] > 0
    assert info["Config"]["User"].split(":")[0] not in ("", "0", "root")
    assert info["Config"]["Labels"]["boxgym.run"] and info["Config"]["Labels"]["boxgym.owner"]


@pytest.mark.parametrize("env_id", gym.env_ids())
def test_check_env_passes_on_every_registered_env(engine, env_id):
    env = gymnasium.make(env_id)
    try:
        check_env(env.unwrapped, skip_render_check=False)
    finally:
        env.close()


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ("this is not a tool call", "not JSON"),
        ({"name": "launch_missiles", "arguments": {}}, "unknown tool 'launch_missiles'"),
        ({"name": "bash", "arguments": {}}, "'command' is required"),
        ({"name": "bash", "arguments": {"command": ["ls"]}}, "valid string"),
        ({"name": "bash", "arguments": "{oops"}, "not valid JSON"),
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


def test_a_command_that_never_ends_times_out(env):
    obs, *_, info = env.step(bash("sleep 1000"))
    assert "timed out" in obs and "[exit code: none]" in obs
    obs, *_ = env.step(bash("echo next"))
    assert "next" in obs


def test_fork_bomb_and_memory_bomb_become_observations(env):
    obs, *_ = env.step(bash(":(){ :|:& };:; sleep 100"))
    assert "timed out" in obs
    obs, *_ = env.step(bash("python3 -c 'x = bytearray(3 * 2**30)'"))
    assert "out of memory" in obs or "MemoryError" in obs
    obs, *_ = env.step(bash("echo alive"))
    assert "alive" in obs


def test_step_limit_truncates_and_still_grades(engine):
    env = gymnasium.make("boxgym/PyFunc-v0", exec_timeout=5)
    env.reset(options={"task": TASK})
    env.unwrapped.spec  # noqa: B018 - made through the registry
    limits = env
    while not isinstance(limits, gym.EpisodeLimits):
        limits = limits.env
    limits.max_steps = 2
    env.step({"name": "write_file", "arguments": {"path": "solution.py", "content": ORACLE}})
    obs, reward, terminated, truncated, info = env.step(bash("true"))
    assert truncated and not terminated
    assert info["verdict"]["outcome"] == "pass" and "step limit" in info["end_reason"]
    env.close()


def test_render_ansi_shows_the_transcript(engine):
    env = gymnasium.make("boxgym/PyFunc-v0", render_mode="ansi")
    env.reset(options={"task": TASK})
    env.step(bash("echo rendered"))
    text = env.render()
    assert f"# task {TASK}" in text and "rendered" in text and '> bash{"command"' in text
    env.close()


def test_close_is_idempotent_and_step_after_the_end_is_an_error(env):
    env.step({"name": "submit", "arguments": {}})
    with pytest.raises(ConfigError, match="call reset"):
        env.step(bash("true"))
    env.close()
    env.close()


def test_seed_picks_the_task_deterministically_and_unknown_tasks_fail(env):
    first = env.reset(seed=11)[1]["task_id"]
    assert env.reset(seed=11)[1]["task_id"] == first
    with pytest.raises(TaskNotFound, match="no task 'nope'"):
        env.reset(options={"task": "nope"})


def test_a_new_episode_never_carries_the_previous_export(env):
    env.step({"name": "submit", "arguments": {}})
    assert env.unwrapped.last_export is not None
    with pytest.raises(TaskNotFound):  # a start that fails still drops the old export
        env.reset(options={"task": "nope"})
    assert env.unwrapped.last_export is None


def test_a_container_dying_mid_episode_is_an_infra_error(env):
    client().containers.get(env.unwrapped.sandbox.container.id).kill()
    with pytest.raises(InfraError) as raised:
        env.step(bash("true"))
    assert raised.value.verdict["outcome"] == "infra_error"
    assert raised.value.verdict["reward"] is None


def test_info_and_observations_are_json_serialisable(env):
    obs, info = env.reset(options={"task": TASK})
    json.dumps(info)
    _, _, _, _, info = env.step({"name": "submit", "arguments": {}})
    json.dumps(info)


def test_budgets_can_be_set_through_gymnasium_make(engine):
    env = gymnasium.make("boxgym/PyFunc-v0", max_steps=1, max_seconds=120)
    env.reset(options={"task": TASK})
    *_, truncated, info = env.step(bash("true"))
    assert truncated and "verdict" in info and "step limit (1)" in info["end_reason"]
    env.close()


def test_a_gymnasium_time_limit_truncation_is_graded_too(engine):
    env = gymnasium.make("boxgym/PyFunc-v0", max_episode_steps=1)
    env.reset(options={"task": TASK})
    *_, truncated, info = env.step(bash("true"))
    assert truncated and info["verdict"]["outcome"] == "fail"
    env.close()


def test_the_spec_of_a_made_env_makes_it_again(engine):
    env = gymnasium.make("boxgym/PyFunc-v0")
    again = gymnasium.make(env.spec)
    assert again.spec.id == "boxgym/PyFunc-v0"
    env.close()
    again.close()
