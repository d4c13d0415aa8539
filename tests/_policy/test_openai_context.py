"""`OpenAIPolicy` and the model's context: a refusal is `ContextFull` only when measured so.

Against `context_server.ContextServer` (a vLLM stand-in that enforces its context and
reports usage): a refusal of a request that could exceed the context (by the server's
count at ``/tokenize``, else its count of the last prompt and the bytes of what came
after) is `ContextFull`; one that surely fits, or from a server whose context is
unknown, stays a plain `PolicyError`.
"""

from __future__ import annotations

from typing import Any

import pytest
from context_server import MODEL, ContextServer, call

from gym import ConfigError, PolicyError
from gym._policy import OpenAIPolicy
from gym._policy._base import ContextFull

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


def reader(body: dict[str, Any]) -> dict[str, Any]:
    return call("read", {"path": "a.txt"}, f"c{len(body['messages'])}")


def policy(url: str, **kwargs: Any) -> OpenAIPolicy:
    kwargs.setdefault("max_tokens", 256)
    return OpenAIPolicy(MODEL, url, max_retries=0, backoff=0.0, **kwargs)


def conversation(result_bytes: int) -> list[dict[str, Any]]:
    """A conversation the model has answered once: its call read a file of this size."""
    return [
        {"role": "system", "content": "You read files."},
        {"role": "user", "content": "Read a.txt."},
        call("read", {"path": "a.txt"}, "c1"),
        {"role": "tool", "tool_call_id": "c1", "content": "s" * result_bytes},
    ]


def test_a_refusal_of_a_request_that_could_exceed_the_context_is_context_full():
    with ContextServer(reader, context=2000).serving() as server:
        pol = policy(server.url)
        with pytest.raises(ContextFull) as caught:
            pol.act(conversation(9000), TOOLS)
        with pytest.raises(ContextFull):
            pol.act(conversation(9000), TOOLS)
        pol.close()
    assert server.statuses == [400, 400]
    assert isinstance(caught.value, PolicyError)  # every other caller: as before
    assert caught.value.context_tokens == 2000
    assert caught.value.end_reason == "context full (2000 tokens)"
    assert "(the server's count)" in str(caught.value)
    assert server.gets == ["/v1/models"]  # asked once, at the first refusal
    assert len(server.tokenized) == 2  # the prompt counted at each refusal
    assert server.tokenized[0]["messages"] == conversation(9000)
    assert server.tokenized[0]["tools"] == TOOLS


def test_the_models_list_is_not_asked_while_the_server_answers():
    with ContextServer(reader, context=2000).serving() as server:
        pol = policy(server.url)
        turn = pol.act(conversation(100), TOOLS)
        pol.close()
    assert turn.calls[0].name == "read"
    assert server.gets == []


def test_a_refusal_when_the_conversation_surely_fits_stays_a_policy_error():
    """The server counted the first prompt (3,000 tokens of 12 KB): with what came after
    it and the answer's 256 tokens the next fits in 4,000, so its 400 is not the
    context (bytes alone, 12 KB, would have said it could be)."""
    tool_result = {"role": "tool", "tool_call_id": "c2", "content": "hello"}

    def has_new_result(body: dict[str, Any]) -> bool:
        return len(body["messages"]) > 4

    with ContextServer(
        reader, context=4000, refuse=has_new_result, tokenize=False
    ).serving() as server:
        pol = policy(server.url)
        messages = conversation(12_000)
        messages.append(pol.act(messages, TOOLS).message)
        messages.append(tool_result)
        with pytest.raises(PolicyError, match="HTTP 400: bad request") as caught:
            pol.act(messages, TOOLS)
        # another conversation (its beginning differs) is bounded by its bytes alone
        other = [*conversation(12_001), messages[4], tool_result]
        with pytest.raises(ContextFull):
            pol.act(other, TOOLS)
        pol.close()
    assert not isinstance(caught.value, ContextFull)
    assert server.statuses == [200, 400, 400]
    assert len(server.tokenized) == 1  # its 404 asked once: no /tokenize there


def always(body: dict[str, Any]) -> bool:
    return True


def test_the_servers_token_count_decides_when_it_has_one():
    """A refusal of 9 KB of text (2,260 tokens by the server's count) with a context of
    4,000: by bytes it could exceed, by the count it fits, so it is the server's fault."""
    with ContextServer(reader, context=4000, refuse=always).serving() as server:
        pol = policy(server.url)
        with pytest.raises(PolicyError, match="HTTP 400: bad request") as caught:
            pol.act(conversation(9000), TOOLS)
        pol.close()
    assert not isinstance(caught.value, ContextFull)
    assert len(server.tokenized) == 1
    with ContextServer(reader, context=4000, refuse=always, tokenize=False).serving() as server:
        pol = policy(server.url)
        with pytest.raises(ContextFull, match="a prompt of up to 9"):
            pol.act(conversation(9000), TOOLS)  # without a count: the bytes' bound
        pol.close()


def test_control_bytes_count_one_byte_each_not_their_json_escapes():
    """A tool result of 6,000 control bytes is 36,000 bytes of JSON escapes but at most
    6,000 tokens: a refusal with a context of 16,000 is not the context's."""
    messages = [
        *conversation(10),
        call("read", {"path": "a.txt"}, "c1"),
        {"role": "tool", "tool_call_id": "c1", "content": "\x01" * 6000},
    ]
    with ContextServer(reader, context=16000, refuse=always, tokenize=False).serving() as server:
        pol = policy(server.url)
        with pytest.raises(PolicyError, match="HTTP 400: bad request") as caught:
            pol.act(messages, TOOLS)
        pol.close()
    assert not isinstance(caught.value, ContextFull)
    assert server.gets == ["/v1/models"]  # the context was known: the bound decided


def test_the_answer_budget_counts_toward_the_context():
    with ContextServer(reader, context=1000).serving() as server:
        pol = policy(server.url, max_tokens=1000)
        with pytest.raises(ContextFull, match="an answer of up to 1000"):
            pol.act(conversation(10), TOOLS)
        pol.close()


def test_an_unknown_context_leaves_every_refusal_a_policy_error():
    with ContextServer(reader, context=2000, listed=False).serving() as server:
        pol = policy(server.url)
        with pytest.raises(PolicyError, match="maximum context length is 2000") as caught:
            pol.act(conversation(9000), TOOLS)
        pol.close()
    assert not isinstance(caught.value, ContextFull)
    assert server.gets == ["/v1/models"]


def test_a_given_context_is_used_without_asking_the_server():
    with ContextServer(reader, context=2000, listed=False).serving() as server:
        pol = policy(server.url, context_tokens=2000)
        with pytest.raises(ContextFull, match=r"context \(2000 tokens\)"):
            pol.act(conversation(9000), TOOLS)
        pol.close()
    assert server.gets == []
    assert pol.params()["context_tokens"] == 2000


def test_check_keeps_the_context_the_server_lists():
    with ContextServer(reader, context=2000).serving() as server:
        pol = policy(server.url)
        pol.check()
        with pytest.raises(ContextFull):
            pol.act(conversation(9000), TOOLS)
        pol.close()
    assert server.gets == ["/v1/models"]  # check's; none at the refusal
    assert pol.params()["context_tokens"] is None  # the setting, not what was learned


def test_a_context_must_be_positive():
    with pytest.raises(ConfigError, match="context_tokens"):
        OpenAIPolicy(MODEL, "http://127.0.0.1:1/v1", context_tokens=0)


def prompt_only(system_bytes: int) -> list[dict[str, Any]]:
    """A conversation the model has not answered yet: the task's prompt alone."""
    return [
        {"role": "system", "content": "s" * system_bytes},
        {"role": "user", "content": "Read a.txt."},
    ]


def test_a_refusal_before_the_models_first_answer_is_never_context_full():
    """The first request is the task's prompt, the tools and max_tokens: a refusal of it,
    whatever it says, is not the agent's doing (an older vLLM refusing tool_choice, a
    model served with a context too short for the task)."""
    with ContextServer(reader, context=2000).serving() as server:
        pol = policy(server.url)
        with pytest.raises(PolicyError, match="first request of the conversation") as caught:
            pol.act(prompt_only(9000), TOOLS)
        pol.close()
    assert not isinstance(caught.value, ContextFull)
    assert "serve the model with a longer context" in str(caught.value)
    with ContextServer(reader, context=2000, refuse=always).serving() as server:
        pol = policy(server.url, max_tokens=1900)
        with pytest.raises(PolicyError, match="bad request") as caught:
            pol.act(prompt_only(10), TOOLS)
        pol.close()
    assert not isinstance(caught.value, ContextFull)


class Inflating(ContextServer):
    """Counts every prompt at a billion tokens, at ``/tokenize`` and in its usage."""

    def count(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return 200, {"count": 10**9, "max_model_len": self.context, "tokens": []}

    def reply(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        status, payload = super().reply(body)
        if status == 200:
            payload["usage"]["prompt_tokens"] = 10**12
        return status, payload


def test_the_servers_absurd_counts_cannot_make_a_conversation_that_fits_look_full():
    """The bytes of the whole conversation bound its tokens whatever the server says:
    a refusal of a few hundred bytes with a context of 100,000 is the server's."""

    def second(body: dict[str, Any]) -> bool:
        return len(body["messages"]) > 4

    with Inflating(reader, context=100_000, refuse=second).serving() as server:
        pol = policy(server.url)
        messages = conversation(10)
        turn = pol.act(messages, TOOLS)
        assert turn.usage["prompt_tokens"] == 10**12
        messages += [turn.message, {"role": "tool", "tool_call_id": "c5", "content": "hi"}]
        with pytest.raises(PolicyError, match="HTTP 400: bad request") as caught:
            pol.act(messages, TOOLS)
        pol.close()
    assert not isinstance(caught.value, ContextFull)
    assert len(server.tokenized) == 1  # asked, and its count not believed
