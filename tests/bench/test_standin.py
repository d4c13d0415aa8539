"""bench/_standin.py: the stand-in model server of bench/latency.py, driven by boxgym's
real OpenAI policy (no engine: the server and the policy only)."""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from _standin import Latency, StandIn  # noqa: E402

from gym.policies import OpenAIPolicy  # noqa: E402

TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
    for name in ("bash", "submit")
]


def play(policy: OpenAIPolicy, tools: list[dict]) -> list[str]:
    """One conversation to its end: the names of the calls, '' for a plain answer."""
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    names = []
    for _ in range(8):
        turn = policy.act(messages, tools)
        messages.append(turn.message)
        names.append(turn.call.name if turn.call else "")
        if not turn.call or turn.call.name == "submit":
            return names
        messages.append({"role": "tool", "tool_call_id": turn.call.id, "content": "ok"})
    return names


def play_shell(policy: OpenAIPolicy, tools: list[dict]) -> list[str]:
    """Like `play`, for agentbox-rl's shell tool: the episode ends on an answer with no call."""
    messages = [{"role": "user", "content": "u"}]
    names = []
    while len(names) < 8:
        turn = policy.act(messages, tools)
        messages.append(turn.message)
        names.append(turn.call.name if turn.call else "")
        if not turn.call:
            break
        messages.append({"role": "tool", "tool_call_id": turn.call.id, "content": "ok"})
    return names


def test_the_policy_gets_the_script_its_tools_ask_for_and_the_server_times_each_step():
    with StandIn("0.05", calls=3) as server:
        policy = OpenAIPolicy("standin", server.url)
        assert play(policy, TOOLS) == ["bash", "bash", "bash", "submit"]
        assert len(server.stats()["gaps"]) == 3  # after each bash answer, not after submit
        server.reset()
        shell = [{"type": "function", "function": {"name": "run_command"}}]
        names = [n for n in play_shell(policy, shell)]
        stats = server.stats()
        policy.close()
    assert names == ["run_command", "run_command", "run_command", ""]  # agentbox-rl's end
    assert stats["requests"] == 4
    assert len(stats["gaps"]) == 3  # one per answer with a call that was followed up
    assert all(0 <= gap < 1.0 for gap in stats["gaps"])


def test_answers_wait_their_latency_without_holding_each_other_up():
    with StandIn("0.5", calls=1) as server:
        policies = [OpenAIPolicy("standin", server.url) for _ in range(8)]
        with ThreadPoolExecutor(8) as pool:
            start = time.monotonic()
            list(pool.map(lambda p: p.act([{"role": "user", "content": "u"}], TOOLS), policies))
            took = time.monotonic() - start
        for policy in policies:
            policy.close()
        assert server.stats()["most_open"] == 8  # all eight waited at once
    assert 0.5 <= took < 2.0  # not 8 x 0.5 s


@pytest.mark.parametrize(
    ("spec", "lo", "hi"), [("0.2", 0.2, 0.2), ("uniform:0.1-0.3", 0.1, 0.3), ("exp:0.2", 0, 10)]
)
def test_latencies_are_drawn_from_their_spec(spec, lo, hi):
    draw = Latency(spec, seed=1)
    values = [draw() for _ in range(200)]
    assert all(lo <= v <= hi for v in values)
    if spec.startswith("exp"):
        assert 0.1 < sum(values) / len(values) < 0.35
