"""The rollout: every call of a turn stepped in order, user turns, the family's prompt.

Played on the desk family (tests/desk_env.py): tools declared as JSON schemas, one or
more user turns, a grade that compares the notes after each turn.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from desk_env import DeskEnv

import gym
from gym import ToolCall
from gym._policy._base import Policy, Turn
from gym.runs import SYSTEM_PROMPT

_ids = itertools.count(1)


def put(key: str, value: str) -> ToolCall:
    return ToolCall(name="put", arguments={"key": key, "value": value})


SUBMIT = ToolCall(name="submit")


class Batches(Policy):
    """Each turn, the next batch of calls in one assistant message (parallel calls)."""

    def __init__(self, *batches: list[ToolCall]) -> None:
        self.batches = list(batches)

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        calls = [c.model_copy(update={"id": f"c{next(_ids)}"}) for c in self.batches.pop(0)]
        wires = [c.wire() for c in calls]
        return Turn(
            message={"role": "assistant", "content": "On it.", "tool_calls": wires}, calls=calls
        )


def test_each_call_of_a_turn_is_a_step_with_its_own_tool_message():
    policy = Batches([put("a", "1"), SUBMIT], [put("b", "2"), SUBMIT])
    result = gym.run_episode(DeskEnv(), policy, task_id="two")
    assert result.outcome == "pass" and result.reward == 1.0
    roles = [m["role"] for m in result.messages]
    assert roles == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
        "assistant",
        "tool",
        "tool",
    ]
    for message in (result.messages[2], result.messages[6]):
        answered = [m["tool_call_id"] for m in result.messages if m.get("role") == "tool"]
        assert all(call["id"] in answered for call in message["tool_calls"])
    assert result.messages[5] == {"role": "user", "content": "Now store b=2."}
    assert result.step_turns == [0, 0, 1, 1] and len(result.steps) == 4
    assert [s.turn for s in result.steps] == [0, 0, 1, 1]
    assert [t["function"]["name"] for t in result.tools] == ["submit", "put", "get"]
    assert [u["content"] for u in result.user_transcript] == ["Store a=1.", "Now store b=2."]


def test_calls_after_the_episode_ends_are_not_run_and_say_so():
    policy = Batches([put("a", "1"), SUBMIT, put("z", "9")])
    result = gym.run_episode(DeskEnv(), policy, task_id="one")
    assert result.outcome == "pass" and len(result.steps) == 2
    last = result.messages[-1]
    assert last["role"] == "tool" and last["content"].startswith("Not run: the episode ended")
    assert result.export is not None and result.export["notes"] == {"a": "1"}


def test_calls_after_a_turn_ends_wait_for_the_next_user_message():
    policy = Batches([put("a", "1"), SUBMIT, put("b", "2")], [put("b", "2"), SUBMIT])
    result = gym.run_episode(DeskEnv(), policy, task_id="two")
    assert result.outcome == "pass"
    skipped = result.messages[5]
    assert skipped["role"] == "tool" and "your turn ended with submit" in skipped["content"]
    assert result.messages[6] == {"role": "user", "content": "Now store b=2."}


def test_the_system_prompt_is_the_environment_s_unless_one_is_given():
    family = gym.run_episode(DeskEnv(), Batches([SUBMIT]), task_id="one")
    assert family.messages[0] == {"role": "system", "content": "You keep notes at a desk."}
    own = gym.run_episode(DeskEnv(), Batches([SUBMIT]), task_id="own")
    assert own.messages[0]["content"] == "You are a careful clerk."
    given = gym.run_episode(DeskEnv(), Batches([SUBMIT]), task_id="own", system_prompt="Mine.")
    assert given.messages[0]["content"] == "Mine."


@pytest.mark.parametrize(("task_id", "turns"), [("one", 1), ("two", 2), ("three", 3)])
def test_the_oracle_passes_every_turn_and_noop_fails(task_id, turns):
    assert gym.run_episode(DeskEnv(), gym.OraclePolicy(), task_id=task_id).outcome == "pass"
    noop = gym.run_episode(DeskEnv(), gym.NoopPolicy(), task_id=task_id)
    assert noop.outcome == "fail" and [s.turn for s in noop.steps] == list(range(turns))


def test_a_family_without_a_prompt_of_its_own_gets_the_default():
    class Plain(DeskEnv):
        system_prompt = None

    result = gym.run_episode(Plain(), Batches([SUBMIT]), task_id="one")
    assert result.messages[0]["content"] == SYSTEM_PROMPT


@pytest.mark.docker
def test_a_two_turn_episode_in_a_real_container():
    env = DeskEnv(sandboxes=gym.sandbox.default_sandboxes(), run="test-turns")
    policy = Batches([put("a", "1"), SUBMIT], [put("b", "2"), SUBMIT])
    result = gym.run_episode(env, policy, task_id="two")
    assert result.outcome == "pass", result.end_reason
    assert result.export == {
        "notes": {"a": "1", "b": "2"},
        "after": [{"a": "1"}, {"a": "1", "b": "2"}],
    }
    assert result.verdict is not None and result.verdict.image_digest.startswith("sha256:")
