"""OpenAIPolicy against a misbehaving server: a real HTTP server on localhost."""

from __future__ import annotations

import socket
import time

import pytest
from policy_samples import BASH_TOOL
from stub_server import Reply, StubServer, vllm_call, vllm_response

import gym

TOOLS = [BASH_TOOL]
MESSAGES = [{"role": "user", "content": "List the files."}]
OK = Reply(vllm_response(tool_calls=[vllm_call("bash", {"command": "ls"})], token_ids=[1, 2]))
UNAVAILABLE = Reply({"error": {"message": "engine is sleeping", "code": 503}}, status=503)


def make(stub: StubServer, **kwargs) -> gym.OpenAIPolicy:
    kwargs.setdefault("backoff", 0.01)
    kwargs.setdefault("max_retries", 3)
    return gym.OpenAIPolicy("served-model", base_url=stub.url, **kwargs)


def test_503_a_few_times_then_success(stub):
    stub.script = [UNAVAILABLE, Reply(UNAVAILABLE.body, 503, {"Retry-After": "1"}), OK]
    pol = make(stub)
    start = time.monotonic()
    turn = pol.act(MESSAGES, TOOLS)
    elapsed = time.monotonic() - start
    assert turn.call is not None and turn.call.arguments == {"command": "ls"}
    assert turn.retries == 2 and len(stub.requests) == 3
    assert elapsed >= 1.0  # Retry-After: 1 was honoured (backoff alone is ~10 ms)
    assert turn.latency_s >= 1.0
    assert stub.requests[0] == stub.requests[2]  # the same turn, asked again
    pol.close()


def test_429_is_retried(stub):
    stub.script = [Reply({"error": {"message": "slow down"}}, status=429), OK]
    assert make(stub).act(MESSAGES, TOOLS).retries == 1


def test_503_forever_is_a_bounded_policy_error(stub):
    stub.default = UNAVAILABLE
    start = time.monotonic()
    with pytest.raises(
        gym.PolicyError, match=r"failed 4 times \(last: HTTP 503: engine is sleeping\)"
    ):
        make(stub, max_retries=3).act(MESSAGES, TOOLS)
    assert len(stub.requests) == 4
    assert time.monotonic() - start < 2.0


def test_hanging_server_times_out_per_request(stub):
    stub.default = Reply(OK.body, delay=30)
    start = time.monotonic()
    with pytest.raises(gym.PolicyError, match="timed out"):
        make(stub, timeout=0.3, max_retries=1).act(MESSAGES, TOOLS)
    assert len(stub.requests) == 2
    assert time.monotonic() - start < 5.0


def test_slow_answer_within_the_timeout_is_fine(stub):
    stub.script = [Reply(OK.body, delay=0.2)]
    assert make(stub, timeout=5).act(MESSAGES, TOOLS).call is not None


def test_malformed_tool_calls_are_a_parse_error_not_an_exception(stub):
    bad = vllm_call("bash", '{"command": "ls"')  # the hermes parser dropped a brace
    stub.script = [Reply(vllm_response(tool_calls=[bad]))]
    turn = make(stub).act(MESSAGES, TOOLS)
    assert turn.call is None and "not JSON" in turn.parse_error
    assert turn.retries == 0


def test_400_fails_at_once_with_the_servers_message(stub):
    message = (
        '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
    )
    stub.default = Reply(
        {"error": {"message": message, "type": "BadRequestError", "code": 400}}, status=400
    )
    with pytest.raises(gym.PolicyError) as info:
        make(stub).act(MESSAGES, TOOLS)
    assert "HTTP 400" in str(info.value) and message in str(info.value)
    assert "--enable-auto-tool-choice" in str(info.value)
    assert len(stub.requests) == 1


def test_connection_refused_is_retried_then_fails():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    pol = gym.OpenAIPolicy("m", base_url=f"http://127.0.0.1:{port}/v1", backoff=0.01, max_retries=2)
    with pytest.raises(gym.PolicyError, match="failed 3 times.*ConnectError"):
        pol.act(MESSAGES, TOOLS)


def test_api_key_is_sent_as_bearer(stub):
    stub.script = [OK]
    make(stub, api_key="k-123").act(MESSAGES, TOOLS)
    assert stub.headers[0]["Authorization"] == "Bearer k-123"
