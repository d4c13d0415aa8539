"""Contract: skyrl-gym 0.4.0 drives a boxgym episode through `BoxgymTextEnv` (real containers).

Needs skyrl-gym beside the venv: scripts/test-adapters.sh installs it and runs these.
"""

from __future__ import annotations

from typing import Any

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym")

from environments.learn import hidden_answer  # noqa: E402
from gym._core._errors import HeldOutError  # noqa: E402
from gym._policy._parse import format_call  # noqa: E402
from gym.train import training_tasks  # noqa: E402
from gym.train._skyrl import ENV_CLASS, BoxgymTextEnv, register, skyrl_rows  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.adapters]

ENV_ID = "boxgym/Learn-v0"


def _make(task: str, **extras: Any) -> Any:
    """The adapter as SkyRL's generator makes it: through skyrl-gym's registry."""
    register()
    row = {"env_id": ENV_ID, "task": task, "seed": 0, "max_turns": 3, **extras}
    return skyrl_gym.make(ENV_CLASS, env_config={}, extras=row)


def _gold(env: Any) -> str:
    """The task's reference solution, written as the model would write it."""
    [call] = env.inner.oracle_calls(env.inner.task)
    return "The key opens this door.\n" + format_call(call.name, call.arguments)


def test_registered_the_skyrl_way_and_the_gold_answer_gets_reward_1(engine):
    env = _make("otter")
    try:
        assert isinstance(env, skyrl_gym.Env) and isinstance(env, BoxgymTextEnv)
        messages, info = env.init([])
        assert [m["role"] for m in messages] == ["system", "user"]
        assert "<tool_call>" in messages[0]["content"] and '"submit"' in messages[0]["content"]
        assert "otter" in messages[1]["content"]
        assert [t["function"]["name"] for t in info["tools"]] == ["submit"]
        out = env.step(_gold(env))
    finally:
        env.close()
    assert out["done"] is True and out["reward"] == 1.0 and out["observations"] == []
    assert out["metadata"]["verdict"]["outcome"] == "pass"
    assert env.get_metrics() == {
        "turns": 1,
        "unended": 0.0,
        "reward": 1.0,
        "passed": 1.0,
        "hidden_pass": 1.0,
        "flagged": 0.0,
    }
    assert env.unscored is False  # ended by its own step: close grades nothing


@pytest.mark.parametrize(("source", "reward"), [("visible", 1.0), ("verdict", 0.0)])
def test_the_reward_is_the_visible_checks_by_default_and_the_hidden_ones_are_watched(
    engine, source, reward
):
    # LearnLeaky's visible check accepts "A"; the hidden one wants the task's answer
    env = _make("cedar", env_id="boxgym/LearnLeaky-v0", reward=source)
    try:
        env.init([])
        assert hidden_answer(env.inner.task) != "A"
        out = env.step(format_call("submit", {"choice": "A"}))
    finally:
        env.close()
    assert out["done"] is True and out["reward"] == reward
    assert out["metadata"]["verdict"]["outcome"] == "fail"
    metrics = env.get_metrics()
    assert metrics["reward"] == reward and metrics["hidden_pass"] == 0.0


def test_an_episode_skyrl_stops_for_length_is_graded_as_it_stands_at_close(engine):
    # PyFunc: the oracle's edits, all but the final submit, pass the tests as they stand
    task = training_tasks("boxgym/PyFunc-v0")[0].id
    env = _make(task, env_id="boxgym/PyFunc-v0", max_turns=20)
    try:
        env.init([])
        calls = env.inner.oracle_calls(env.inner.task)
        for call in calls[:-1]:
            out = env.step("Working.\n" + format_call(call.name, call.arguments))
            assert out["done"] is False and out["reward"] == 0.0
        # SkyRL's length stop: get_metrics, then close, no further step
        assert env.get_metrics() == {"turns": len(calls) - 1, "unended": 1.0}
    finally:
        env.close()
    assert env.verdict is not None and env.verdict["outcome"] == "pass"
    assert env.reward == 1.0 and env.unscored is True
    assert env.get_metrics()["reward"] == 1.0


def test_a_wrong_answer_gets_reward_0_after_a_turn_with_no_call(engine):
    env = _make("otter")
    try:
        env.init([{"role": "user", "content": "Be brief."}])
        first = env.step("I am not sure which door.")
        assert first["done"] is False and first["reward"] == 0.0
        [said] = first["observations"]
        assert said["role"] == "user" and said["content"].startswith("Error:")
        wrong = "A" if hidden_answer(env.inner.task) != "A" else "B"
        out = env.step(format_call("submit", {"choice": wrong}))
    finally:
        env.close()
    assert out["done"] is True and out["reward"] == 0.0
    assert out["metadata"]["verdict"]["outcome"] == "fail"


def test_skyrl_max_turns_ends_and_grades_the_episode_as_it_stands(engine):
    env = _make("maple", max_turns=1)
    try:
        env.init([])
        out = env.step("Let me think about it first.")
    finally:
        env.close()
    assert out["done"] is True and out["reward"] == 0.0
    assert out["metadata"]["end_reason"] == "max_turns"
    assert out["metadata"]["verdict"]["outcome"] == "fail"


def test_a_held_out_task_is_refused_and_rows_name_only_training_tasks():
    register()
    with pytest.raises(HeldOutError):
        skyrl_gym.make(ENV_CLASS, extras={"env_id": ENV_ID, "task": "otter-reworded"})
    rows = skyrl_rows(ENV_ID)
    assert sorted(r["task"] for r in rows) == ["cedar", "falcon", "maple", "otter"]
    assert {r["env_class"] for r in rows} == {ENV_CLASS}
    assert {r["reward"] for r in rows} == {"visible"}
