"""Whole episodes on a real environment, driven by OpenAIPolicy against a stub server."""

from __future__ import annotations

import json
from typing import Any

import gymnasium
import pytest
from context_server import MODEL, ContextServer, call
from stub_server import Reply, vllm_call, vllm_response

import gym

pytestmark = pytest.mark.docker

TASK = "sum-of-digits"
SOLUTION = "def digit_sum(n):\n    return sum(int(d) for d in str(abs(n)))\n"


def solver(body: dict[str, Any]) -> Reply:
    """Writes the solution first, then submits once the write's result came back."""
    tool_names = {t["function"]["name"] for t in body.get("tools", [])}
    assert {"write_file", "submit"} <= tool_names
    done = [m for m in body["messages"] if m["role"] == "tool"]
    if not done:
        call = vllm_call("write_file", {"path": "solution.py", "content": SOLUTION})
    else:
        assert "Wrote" in done[-1]["content"]
        call = vllm_call("submit", {})
    return Reply(vllm_response(tool_calls=[call], token_ids=[1, 2, 3], prompt_token_ids=[4, 5]))


def test_episode_passes_through_a_stub_server(engine, stub):
    stub.default = solver
    policy = gym.OpenAIPolicy("served-model", base_url=stub.url, backoff=0.01)
    result = gym.run_episode(gymnasium.make("boxgym/PyFunc-v0"), policy, task_id=TASK)
    policy.close()
    assert result.outcome == "pass", (result.end_reason, result.verdict)
    assert result.reward == 1.0
    assert [t.call.name for t in result.turns if t.call] == ["write_file", "submit"]
    assert all(t.completion_token_ids == [1, 2, 3] for t in result.turns)
    # the conversation stayed valid: each tool call has its result, right after it
    roles = [m["role"] for m in result.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert result.messages[3]["tool_call_id"] == result.messages[2]["tool_calls"][0]["id"]
    second = stub.requests[1]["messages"]
    assert json.loads(second[2]["tool_calls"][0]["function"]["arguments"])["content"] == SOLUTION


def test_unavailable_server_is_an_infra_error_never_a_reward(engine, stub):
    stub.default = Reply({"error": {"message": "overloaded"}}, status=503)
    policy = gym.OpenAIPolicy("served-model", base_url=stub.url, backoff=0.01, max_retries=2)
    result = gym.run_episode(gymnasium.make("boxgym/PyFunc-v0"), policy, task_id=TASK)
    policy.close()
    assert result.outcome == "infra_error"
    assert result.reward is None
    assert "policy:" in result.end_reason and "503" in result.end_reason
    assert result.turns == []


def test_an_episode_that_fills_the_context_is_graded_on_what_it_left(engine):
    """The solution is written, then read back each turn until the context is full and
    the server refuses: the episode ends truncated and its work is graded (a pass)."""
    padded = SOLUTION + "# " + "x" * 3000 + "\n"

    def rereader(body: dict[str, Any]) -> dict[str, Any]:
        n = len(body["messages"])
        if not any(m["role"] == "tool" for m in body["messages"]):
            return call("write_file", {"path": "solution.py", "content": padded}, f"c{n}")
        return call("read_file", {"path": "solution.py"}, f"c{n}")

    with ContextServer(rereader, context=4096).serving() as server:
        policy = gym.OpenAIPolicy(MODEL, base_url=server.url, max_tokens=256, max_retries=0)
        result = gym.run_episode(gymnasium.make("boxgym/PyFunc-v0"), policy, task_id=TASK)
        policy.close()
    assert server.statuses[-1] == 400
    assert result.end_reason == "context full (4096 tokens)"
    assert result.outcome == "pass" and result.reward == 1.0, result.verdict
    assert [s.call.name for s in result.steps if s.call][:2] == ["write_file", "read_file"]
