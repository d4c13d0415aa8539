"""An episode whose own tool outputs fill the model's context ends truncated and graded.

The desk family (tests/desk_env.py, local sandboxes) driven by `OpenAIPolicy` against a
vLLM stand-in that enforces its context (`context_server.ContextServer`): the agent
stores a long note, then reads it back each turn until the server refuses the prompt.
That is the agent's doing (a graded fail, its final state exported), never an
infra_error; a refusal the policy cannot lay on the context stays one.
"""

from __future__ import annotations

from typing import Any

from context_server import MODEL, ContextServer, call
from desk_env import DeskEnv

import gym
from gym._policy import OpenAIPolicy

LONG = "x" * 3000


def hoarder(body: dict[str, Any]) -> dict[str, Any]:
    """Stores a long note first, then reads it back, turn after turn."""
    n = len(body["messages"])
    if not any(m["role"] == "tool" for m in body["messages"]):
        return call("put", {"key": "big", "value": LONG}, f"c{n}")
    return call("get", {"key": "big"}, f"c{n}")


def episode(server: ContextServer, **kwargs: Any) -> gym.EpisodeResult:
    policy = OpenAIPolicy(MODEL, server.url, max_tokens=256, max_retries=0, backoff=0.0, **kwargs)
    try:
        return gym.run_episode(DeskEnv(max_steps=50), policy, task_id="one")
    finally:
        policy.close()


def test_an_episode_that_fills_the_context_ends_truncated_and_graded():
    with ContextServer(hoarder, context=4096).serving() as server:
        result = episode(server)
    assert server.statuses[-1] == 400 and server.statuses.count(400) == 1
    assert result.outcome == "fail" and result.reward == 0.0
    assert result.end_reason == "context full (4096 tokens)"
    assert result.verdict is not None and result.verdict.outcome == "fail"
    assert result.export is not None and result.export["notes"] == {"big": LONG}
    assert [s.call.name for s in result.steps if s.call] == ["put", "get", "get", "get", "get"]
    assert len(result.turns) == len(server.statuses) - 1  # the refused request is no turn


def test_a_refusal_when_the_conversation_surely_fits_stays_an_infra_error():
    def second(body: dict[str, Any]) -> bool:
        return any(m["role"] == "tool" for m in body["messages"])

    with ContextServer(hoarder, context=100_000, refuse=second).serving() as server:
        result = episode(server)
    assert server.statuses == [200, 400]
    assert result.outcome == "infra_error" and result.reward is None
    assert result.end_reason.startswith("policy: ") and "HTTP 400: bad request" in result.end_reason
    assert result.export is None


def test_an_unknown_context_is_as_before_an_infra_error():
    with ContextServer(hoarder, context=4096, listed=False).serving() as server:
        result = episode(server)
    assert server.statuses[-1] == 400 and server.gets == ["/v1/models"]
    assert result.outcome == "infra_error" and result.reward is None
    assert "maximum context length is 4096" in result.end_reason
