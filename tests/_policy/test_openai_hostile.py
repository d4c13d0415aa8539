"""`OpenAIPolicy` against answers no honest server sends: whatever a well-formed answer
carries is the model's, read into a turn; a server's failure is an error, never a crash.

Against `stub_server.StubServer` (real HTTP on localhost): a lone surrogate anywhere in
the model's words (``"\\ud800"`` is valid JSON, no UTF-8 text holds it) reaches the
conversation as U+FFFD, so the next request can be sent; log-probabilities and usage a
float or the store cannot hold are absent; a server trickling its answer is timed out
as a whole, not read for ever.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from stub_server import Reply, StubServer, vllm_call, vllm_response

from gym import PolicyError
from gym._policy import OpenAIPolicy
from gym._policy._base import TOKENS_MAX, Turn

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
    for name in ("bash", "submit")
]
MESSAGES = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
LONE = "\ud800"


def policy(url: str, **kwargs: Any) -> OpenAIPolicy:
    return OpenAIPolicy("served-model", url, max_retries=0, backoff=0.0, **kwargs)


def answers(content: str | None, calls: list[dict[str, Any]] | None = None) -> Reply:
    return Reply(vllm_response(content=content, tool_calls=calls))


def two_turns(stub: StubServer, first: Reply) -> tuple[Turn, dict[str, Any]]:
    """The turn read from ``first``, and the next request, which carries it (sent)."""
    stub.script = [first, answers("done")]
    pol = policy(stub.url)
    turn = pol.act(MESSAGES, TOOLS)
    conversation = [*MESSAGES, turn.message]
    for call in turn.calls:
        conversation.append({"role": "tool", "tool_call_id": call.id, "content": "ok"})
    pol.act(conversation, TOOLS)
    pol.close()
    return turn, stub.requests[1]


def test_a_lone_surrogate_in_the_models_text_is_replaced_and_the_next_request_sent(stub):
    turn, sent = two_turns(stub, answers(f"bad {LONE} text"))
    assert turn.message["content"] == "bad \ufffd text"
    assert sent["messages"][-1]["content"] == "bad \ufffd text"


def test_a_lone_surrogate_in_a_tool_calls_id_and_arguments_is_replaced(stub):
    call = vllm_call("bash", '{"command": "echo ' + LONE + '"}')
    call["id"] = f"id{LONE}"
    turn, sent = two_turns(stub, answers(None, [call]))
    assert turn.calls[0].id == "id\ufffd"
    assert turn.calls[0].arguments == {"command": "echo \ufffd"}
    assert sent["messages"][-1] == {"role": "tool", "tool_call_id": "id\ufffd", "content": "ok"}
    assert sent["messages"][-2]["tool_calls"][0]["id"] == "id\ufffd"


def test_a_lone_surrogate_in_a_text_tool_call_block_is_replaced(stub):
    block = '<tool_call>{"name": "bash", "arguments": {"command": "echo ' + LONE + '"}}</tool_call>'
    turn, _ = two_turns(stub, answers(block))
    assert turn.calls[0].name == "bash"
    assert turn.calls[0].arguments == {"command": "echo \ufffd"}


def test_a_surrogate_pair_spelled_as_two_escapes_stays_its_character(stub):
    """Only lone surrogates change: JSON's spelling of an emoji is that emoji."""
    stub.script = [Reply(raw=b'{"choices": [{"message": {"content": "a \\ud83d\\ude00"}}]}')]
    pol = policy(stub.url)
    assert pol.act(MESSAGES, TOOLS).message["content"] == "a \U0001f600"
    pol.close()


def test_a_servers_error_message_with_a_lone_surrogate_is_valid_text(stub):
    stub.script = [Reply({"error": {"message": f"bad {LONE}"}}, status=401)]
    pol = policy(stub.url)
    with pytest.raises(PolicyError) as caught:
        pol.act(MESSAGES, TOOLS)
    pol.close()
    assert "bad \ufffd" in str(caught.value)
    str(caught.value).encode("utf-8")  # it can be stored and printed


@pytest.mark.parametrize(
    "logprob", [10**400, -(10**400), True, "0.5"], ids=["huge", "-huge", "bool", "text"]
)
def test_log_probabilities_a_float_cannot_hold_are_absent(stub, logprob):
    body = vllm_response(content="hi", token_ids=[5, 6], logprobs=[-0.5, -1.0])
    body["choices"][0]["logprobs"]["content"][1]["logprob"] = logprob
    stub.script = [Reply(body)]
    pol = policy(stub.url)
    turn = pol.act(MESSAGES, TOOLS)
    pol.close()
    assert turn.logprobs is None
    assert turn.completion_token_ids == [5, 6]


def test_usage_outside_plausible_counts_is_absent(stub):
    body = vllm_response(content="hi")
    body["usage"] = {
        "prompt_tokens": 10**30,
        "completion_tokens": -1,
        "total_tokens": TOKENS_MAX,
        "cached_tokens": TOKENS_MAX - 1,
        "reasoning_tokens": True,
    }
    stub.script = [Reply(body)]
    pol = policy(stub.url)
    turn = pol.act(MESSAGES, TOOLS)
    pol.close()
    assert turn.usage == {"cached_tokens": TOKENS_MAX - 1}


def test_a_turn_keeps_only_plausible_token_counts():
    turn = Turn(message={"role": "assistant"}, usage={"prompt_tokens": -5, "completion_tokens": 7})
    assert turn.usage == {"completion_tokens": 7}


class Trickle:
    """Answers every POST with a 200 whose body comes one byte every ``every`` seconds."""

    def __init__(self, every: float = 0.1) -> None:
        self.stop = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", "100000")
                self.end_headers()
                for _ in range(100_000):
                    if owner.stop.wait(every):
                        return
                    try:
                        self.wfile.write(b" ")
                        self.wfile.flush()
                    except OSError:
                        return

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


def test_an_answer_trickling_past_the_timeout_is_a_timeout_retried_then_an_error():
    """Each read comes within the timeout; the answer as a whole does not."""
    trickle = Trickle()
    thread = threading.Thread(target=trickle.server.serve_forever, daemon=True)
    thread.start()
    try:
        pol = OpenAIPolicy("served-model", trickle.url, max_retries=1, backoff=0.0, timeout=1.0)
        start = time.monotonic()
        with pytest.raises(PolicyError, match=r"failed 2 times .*timed out") as caught:
            pol.act(MESSAGES, TOOLS)
        took = time.monotonic() - start
        pol.close()
    finally:
        trickle.stop.set()
        trickle.server.shutdown()
        trickle.server.server_close()
    assert "no whole answer in 1 s" in str(caught.value)
    assert took < 5.0  # two attempts of about a second each, not 100,000 bytes' worth
