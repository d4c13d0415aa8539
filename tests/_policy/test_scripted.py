"""Scripted policies once their script is exhausted: the final call again, or an empty submit."""

from __future__ import annotations

from desk_env import DeskEnv

import gym
from gym.policies import ScriptPolicy

PUT = gym.ToolCall(name="put", arguments={"key": "a", "value": "1"})
SUBMIT = gym.ToolCall(name="submit", arguments={})


def _started(calls: list[gym.ToolCall]) -> ScriptPolicy:
    env = DeskEnv()
    env.reset(options={"task": "one"})
    policy = ScriptPolicy(calls)
    assert env.task is not None
    policy.start(env.task, env)
    env.close()
    return policy


def _names(policy: ScriptPolicy, n: int) -> list[tuple[str, dict[str, object]]]:
    turns = [policy.act([], []) for _ in range(n)]
    return [(t.call.name, t.call.arguments) for t in turns if t.call is not None]


def test_a_script_that_ends_with_the_final_tool_makes_that_call_again():
    final = gym.ToolCall(name="submit", arguments={"answer": "a=1"})  # arguments kept
    said = _names(_started([PUT, final]), 4)
    assert said == [("put", PUT.arguments)] + [("submit", {"answer": "a=1"})] * 3


def test_a_script_that_ends_with_another_tool_is_not_repeated():
    assert _names(_started([PUT]), 3) == [("put", PUT.arguments), ("submit", {}), ("submit", {})]


def test_the_repeated_final_call_gets_an_id_of_its_own():
    policy = _started([SUBMIT.model_copy(update={"id": "s1"})])
    first, again = policy.act([], []), policy.act([], [])
    assert first.call is not None and again.call is not None
    assert first.call.id == "s1" and again.call.id not in (None, "", "s1")


class _Twice:
    """A user who asks the same thing once more after the first submit."""

    def start(self, task: gym.Task, seed: int | None) -> None:
        self.left = 1

    def reply(self, task: gym.Task, conversation: list[dict[str, object]]) -> str | None:
        self.left -= 1
        return "Are you sure? Submit again." if self.left >= 0 else None


def test_the_oracle_s_answer_holds_through_a_user_turn():
    env = DeskEnv(user=_Twice())
    result = gym.run_episode(env, ScriptPolicy([PUT, SUBMIT]), task_id="one")
    calls = [s.call.name for s in result.steps if s.call is not None]
    assert calls == ["put", "submit", "submit"]
    assert [m["content"] for m in result.messages if m["role"] == "user"][1:] == [
        "Are you sure? Submit again."
    ]
