"""Episodes of several user turns: the final tool ends a turn, the user sends the next one.

The desk family (tests/desk_env.py) snapshots its notes at every turn's end and grades
the notes after each turn, so a turn that ends too early or twice shows in the verdict.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from desk_env import DeskEnv

import gym
from gym._envs._users import RecordingUser, ScriptedUser, User
from gym.sandbox import Sandbox


def put(key: str, value: str) -> dict[str, Any]:
    return {"name": "put", "arguments": {"key": key, "value": value}}


SUBMIT = {"name": "submit", "arguments": {}}


def test_a_two_turn_episode_ends_its_first_turn_without_ending():
    env = DeskEnv()
    obs, info = env.reset(options={"task": "two"})
    assert obs == "Store a=1." and info["turn"] == 0
    env.step(put("a", "1"))
    obs, reward, terminated, truncated, info = env.step(SUBMIT)
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert obs == "Submitted." and info["user"] == "Now store b=2." and info["turn"] == 1
    assert (env.turn, env.turn_count, env.done) == (1, 2, False)
    env.step(put("b", "2"))
    *_, terminated, _, info = env.step(SUBMIT)
    assert terminated and info["verdict"]["outcome"] == "pass"
    assert [(r.turn, r.turn_end, r.user) for r in env.trace] == [
        (0, False, None),
        (0, True, "Now store b=2."),
        (1, False, None),
        (1, True, None),
    ]
    assert env.user_transcript == [
        {"turn": 0, "content": "Store a=1."},
        {"turn": 1, "content": "Now store b=2."},
    ]


def test_a_single_turn_task_ends_at_submit_as_before():
    env = DeskEnv()
    env.reset(options={"task": "one"})
    env.step(put("a", "1"))
    _, reward, terminated, _, info = env.step(SUBMIT)
    assert terminated and reward == 1.0 and "user" not in info
    assert env.trace[-1].turn_end and env.trace[-1].turn == 0 and env.trace[-1].user is None


def test_the_verdict_sees_the_state_after_each_turn():
    """Doing turn two's work in turn one leaves the first snapshot wrong: fail."""
    env = DeskEnv()
    env.reset(options={"task": "two"})
    env.step(put("a", "1"))
    env.step(put("b", "2"))
    env.step(SUBMIT)
    *_, info = env.step(SUBMIT)
    assert info["verdict"]["outcome"] == "fail"
    assert env.final_state is not None
    assert env.final_state.after == [{"a": "1", "b": "2"}, {"a": "1", "b": "2"}]


def test_budgets_count_over_the_whole_episode():
    env = DeskEnv(max_steps=3)
    env.reset(options={"task": "two"})
    env.step(put("a", "1"))
    env.step(SUBMIT)
    *_, terminated, truncated, info = env.step(put("b", "2"))
    assert truncated and not terminated and "step limit (3)" in info["end_reason"]


def test_a_budget_spent_at_a_turn_s_end_ends_the_episode_there():
    env = DeskEnv(max_steps=2)
    env.reset(options={"task": "two"})
    env.step(put("a", "1"))
    *_, terminated, truncated, info = env.step(SUBMIT)
    assert truncated and not terminated and "user" not in info
    assert env.trace[-1].turn_end and env.trace[-1].user is None and env.turn_count == 1


def test_the_conversation_is_rebuilt_from_the_trace():
    env = DeskEnv()
    env.reset(options={"task": "two"})
    env.step({**put("a", "1"), "id": "c1", "content": "Storing."})
    env.step(SUBMIT)
    roles = [m["role"] for m in env.conversation()]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "user"]
    first, said, answer, *_, last = env.conversation()
    assert first["content"] == "Store a=1." and last["content"] == "Now store b=2."
    assert said["content"] == "Storing." and said["tool_calls"][0]["id"] == "c1"
    assert answer == {"role": "tool", "tool_call_id": "c1", "content": "stored"}


class Echo:
    """A user that answers once, recording what it was given; a `RecordingUser`."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers
        self.seen: list[list[dict[str, Any]]] = []
        self.seeds: list[int | None] = []

    def start(self, task: gym.Task, seed: int | None) -> None:
        self.seeds.append(seed)
        self.queue = list(self.answers)

    def reply(self, task: gym.Task, conversation: list[dict[str, Any]]) -> str | None:
        self.seen.append(conversation)
        return self.queue.pop(0) if self.queue else None

    def raw_turn(self) -> dict[str, Any] | None:
        return {"said": len(self.seen)}


def test_a_user_of_its_own_answers_and_is_recorded():
    user = Echo(["Also store b=2."])
    assert isinstance(user, RecordingUser) and isinstance(ScriptedUser(), User)
    env = DeskEnv(user=user)
    env.reset(seed=5, options={"task": "one"})
    env.step(put("a", "1"))
    *_, terminated, _, info = env.step(SUBMIT)
    assert not terminated and info["user"] == "Also store b=2."
    assert user.seeds == [5] and user.seen[0][-1]["role"] == "tool"
    assert env.user_transcript[1] == {"turn": 1, "content": "Also store b=2.", "raw": {"said": 1}}
    *_, terminated, _, info = env.step(SUBMIT)
    assert terminated and len(user.seen) == 2
    assert info["verdict"]["outcome"] == "fail"  # two snapshots, the task expects one turn


def test_a_user_that_has_nothing_more_to_say_ends_the_episode():
    env = DeskEnv(user=Echo([]))
    env.reset(options={"task": "two"})
    env.step(put("a", "1"))
    *_, terminated, _, info = env.step(SUBMIT)
    assert terminated and info["verdict"]["outcome"] == "fail"


class Broken(DeskEnv):
    def turn_ended(self, task: gym.Task, sandbox: Sandbox, turn: int) -> None:
        raise gym.SandboxError("the container went away")


def test_a_turn_end_hook_that_fails_is_an_infrastructure_error():
    env = Broken()
    env.reset(options={"task": "two"})
    with pytest.raises(gym.InfraError) as caught:
        env.step(SUBMIT)
    assert caught.value.verdict is not None
    assert caught.value.verdict["outcome"] == "infra_error" and env.done
    assert "turn_ended raised SandboxError" in caught.value.verdict["reason"]


class Down(Echo):
    def reply(self, task: gym.Task, conversation: list[dict[str, Any]]) -> str | None:
        raise gym.PolicyError("the user's model server is down")


def test_a_user_that_fails_is_an_infrastructure_error_not_the_agent_s():
    env = DeskEnv(user=Down([]))
    env.reset(options={"task": "two"})
    with pytest.raises(gym.InfraError) as caught:
        env.step(SUBMIT)
    assert caught.value.verdict is not None and caught.value.verdict["reward"] is None
    assert "the user failed: PolicyError" in caught.value.verdict["reason"] and env.done


def test_the_system_prompt_is_the_task_s_or_the_family_s():
    env = DeskEnv()
    assert env.reset(options={"task": "one"})[1]["system_prompt"] == "You keep notes at a desk."
    assert env.reset(options={"task": "own"})[1]["system_prompt"] == "You are a careful clerk."
    env.close()


def test_render_shows_the_user_turns():
    env = DeskEnv(render_mode="ansi")
    env.reset(options={"task": "two"})
    env.step(SUBMIT)
    assert "# user (turn 1)\nNow store b=2." in (env.render() or "")
    env.close()


class Slow(Echo):
    """A user whose answers take as long as a simulated user's model may."""

    def reply(self, task: gym.Task, conversation: list[dict[str, Any]]) -> str | None:
        time.sleep(0.6)
        return super().reply(task, conversation)


def test_the_user_s_time_is_not_the_agent_s():
    """A user slower than the whole time budget spends none of it; the agent's time does."""
    env = DeskEnv(user=Slow(["Also store b=2."]), max_seconds=0.4)
    env.reset(options={"task": "one"})
    env.step(put("a", "1"))
    *_, terminated, truncated, info = env.step(SUBMIT)
    assert not (terminated or truncated) and info["user"] == "Also store b=2."
    time.sleep(0.5)  # the agent's own slowness
    *_, truncated, info = env.step(put("b", "2"))
    assert truncated and "time limit" in info["end_reason"]
