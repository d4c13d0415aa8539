"""Whose doing an episode's end is: the model's output is the agent's, the
infrastructure's failures never are.

On the desk family (tests/desk_env.py, local sandboxes): a model server that fails
before each answer (HTTP 503 asking for a second's wait) costs the agent none of its
time budget; an exception escaping the policy's ``act`` or a step (a defect, of boxgym
or of the policy) ends that episode as ``infra_error``, logged with its traceback,
never graded, and never escapes `run_episode`.
"""

from __future__ import annotations

import json
import logging
from http.server import ThreadingHTTPServer
from typing import Any

import pytest
from context_server import call
from desk_env import DeskEnv
from models_server import JsonHandler, LocalServer

import gym
from gym._policy import OpenAIPolicy
from gym._policy._base import Policy, Turn

CALLS = [("put", {"key": "a", "value": "1"}), ("get", {"key": "a"}), ("submit", {})]
"""The agent's turns: the task ``one`` done, and one read before its submit."""


class Flaky(LocalServer):
    """Answers every other chat completion with 503 and ``Retry-After: 1``; the others
    with the next call of `CALLS` (by the assistant turns in the request)."""

    def __init__(self) -> None:
        self.posts = 0
        owner = self

        class Handler(JsonHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
                owner.posts += 1
                if owner.posts % 2:
                    self._send(503, {"error": "overloaded"}, {"Retry-After": "1"})
                    return
                turn = sum(m["role"] == "assistant" for m in body["messages"])
                name, arguments = CALLS[turn]
                message = call(name, arguments, f"c{turn}")
                choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
                self._send(200, {"object": "chat.completion", "choices": [choice]})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True


def test_the_time_a_policy_waits_on_its_failing_server_is_not_the_agents():
    """Three turns, each after a 503 and a second's wait: three seconds against a budget
    of 1.5, all of them the server's. Before, the second step ended 'time limit'."""
    with Flaky().serving() as server:
        policy = OpenAIPolicy("m", server.url, max_retries=2, backoff=0.0)
        try:
            result = gym.run_episode(DeskEnv(max_seconds=1.5), policy, task_id="one")
        finally:
            policy.close()
    assert [t.retries for t in result.turns] == [1, 1, 1]
    assert all(1.0 <= t.waited_s <= t.latency_s for t in result.turns)
    assert result.duration_s > 3.0
    assert result.end_reason == "submit"
    assert result.outcome == "pass" and result.reward == 1.0


class Raising(Policy):
    """Calls ``put`` once, then raises an error that is no `gym.GymError`."""

    def __init__(self) -> None:
        self.turns = 0

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        self.turns += 1
        if self.turns > 1:
            raise TypeError("a bug in the policy")
        put = gym.ToolCall(name="put", arguments={"key": "a", "value": "1"}, id="c1")
        return Turn(
            message={"role": "assistant", "content": None, "tool_calls": [put.wire()]}, calls=[put]
        )


class BrokenGet(DeskEnv):
    """A desk whose ``get`` tool has a bug: it raises."""

    def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        if name == "get":
            raise KeyError("a bug in the tool")
        return super().call_tool(name, arguments)


class Scripted(Policy):
    """Plays `CALLS` in order."""

    def __init__(self) -> None:
        self.turn = 0

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        name, arguments = CALLS[self.turn]
        self.turn += 1
        tool_call = gym.ToolCall(name=name, arguments=arguments, id=f"c{self.turn}")
        message = {"role": "assistant", "content": None, "tool_calls": [tool_call.wire()]}
        return Turn(message=message, calls=[tool_call])


@pytest.mark.parametrize(
    ("env", "policy", "error"),
    [
        (DeskEnv, Raising, "TypeError: a bug in the policy"),
        (BrokenGet, Scripted, "KeyError: 'a bug in the tool'"),
    ],
    ids=["act", "step"],
)
def test_an_unexpected_exception_ends_its_episode_as_infra_error_never_graded(
    env: type[DeskEnv], policy: type[Policy], error: str, caplog: pytest.LogCaptureFixture
):
    box = env()
    with caplog.at_level(logging.ERROR, logger="gym.rollout"):
        result = gym.run_episode(box, policy(), task_id="one")
    assert result.outcome == "infra_error" and result.reward is None
    assert result.verdict is None and result.export is None
    assert result.end_reason == f"infra: boxgym defect: {error}"
    assert box.verdict is None  # never graded
    assert box.sandbox is None  # its sandbox given back
    [record] = [r for r in caplog.records if r.name == "gym.rollout"]
    assert "boxgym defect" in record.getMessage() and record.exc_info is not None


def test_an_interrupt_still_ends_the_run():
    class Interrupted(Policy):
        def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        gym.run_episode(DeskEnv(), Interrupted(), task_id="one")
