"""OpenAIPolicy against responses shaped exactly as vLLM's server writes them (MockTransport).

Response shapes: vllm/entrypoints/openai/chat_completion/protocol.py (ChatCompletionResponse,
ChatCompletionResponseChoice.token_ids, prompt_token_ids, ChatCompletionLogProbs) and the
request field ``return_token_ids`` of ChatCompletionRequest; see stub_server.vllm_response.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest
from policy_samples import MESSAGES, TOOLS
from stub_server import vllm_call, vllm_response

import gym
from gym._core._http import retry_after


class Recorder:
    """A MockTransport handler answering from a list, recording requests.

    ``GET /models`` (the policy asks for the model's context at a refusal) lists no
    model: it is recorded in ``gets``, apart from the chat requests.
    """

    def __init__(self, *answers: httpx.Response | dict[str, Any]) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []
        self.gets: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            self.gets.append(request.url.path)
            return httpx.Response(404, json={"error": {"message": "no list"}})
        self.requests.append(request)
        answer = self.answers.pop(0)
        return answer if isinstance(answer, httpx.Response) else httpx.Response(200, json=answer)

    def body(self, i: int = -1) -> dict[str, Any]:
        return json.loads(self.requests[i].content)


def policy(handler: Recorder, **kwargs: Any) -> gym.OpenAIPolicy:
    kwargs.setdefault("backoff", 0.001)
    return gym.OpenAIPolicy("served-model", transport=httpx.MockTransport(handler), **kwargs)


def test_vllm_tool_call_with_token_ids_and_logprobs(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    call = vllm_call("bash", {"command": "ls -la"})
    answer = vllm_response(
        tool_calls=[call],
        token_ids=[151657, 198, 4913, 151658],
        prompt_token_ids=[151644, 8948, 198, 2610],
        logprobs=[-0.01, -0.5, -1.25, 0.0],
    )
    handler = Recorder(answer)
    turn = policy(handler, seed=7).act(MESSAGES, TOOLS)

    assert turn.call is not None
    assert (turn.call.name, turn.call.arguments, turn.call.id) == (
        "bash",
        {"command": "ls -la"},
        call["id"],
    )
    assert turn.parse_error == ""
    assert turn.message == {"role": "assistant", "content": None, "tool_calls": [call]}
    assert turn.prompt_token_ids == [151644, 8948, 198, 2610]
    assert turn.completion_token_ids == [151657, 198, 4913, 151658]
    assert turn.logprobs == [-0.01, -0.5, -1.25, 0.0]
    assert turn.usage == {"prompt_tokens": 4, "total_tokens": 8, "completion_tokens": 4}
    assert turn.retries == 0 and turn.latency_s > 0

    request = handler.requests[0]
    assert request.url == "http://localhost:8000/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    body = handler.body()
    assert body["model"] == "served-model"
    assert body["messages"] == MESSAGES
    assert body["tools"] == TOOLS and body["tool_choice"] == "required"  # structured decoding
    assert body["temperature"] == 0.0 and body["top_p"] == 1.0  # always explicit
    assert body["logprobs"] is True and body["return_token_ids"] is True
    assert body["seed"] == 7 and body["max_tokens"] == 1024


def test_every_one_of_several_calls_is_kept_in_order():
    calls = [vllm_call("bash", {"command": "ls"}), vllm_call("submit", {})]
    turn = policy(Recorder(vllm_response(content="Two things.", tool_calls=calls))).act(
        MESSAGES, TOOLS
    )
    assert turn.call is not None and turn.call.name == "bash"
    assert [c.name for c in turn.calls] == ["bash", "submit"]
    assert [c.id for c in turn.calls] == [c["id"] for c in calls]
    assert turn.message["tool_calls"] == calls
    assert turn.message["content"] == "Two things."


def test_a_malformed_call_and_those_after_it_are_left_as_text():
    bad = {"id": "c2", "type": "function", "function": {"name": "bash", "arguments": "[1]"}}
    calls = [vllm_call("bash", {"command": "ls"}), bad, vllm_call("submit", {})]
    turn = policy(Recorder(vllm_response(content="Three.", tool_calls=calls))).act(MESSAGES, TOOLS)
    assert [c.name for c in turn.calls] == ["bash"] and turn.parse_error == ""
    assert turn.message["tool_calls"] == calls[:1]
    assert turn.message["content"].startswith("Three.\n<tool_call>")
    assert '"submit"' in turn.message["content"]
    first_bad = policy(Recorder(vllm_response(content="", tool_calls=[bad, calls[0]]))).act(
        MESSAGES, TOOLS
    )
    assert first_bad.calls == [] and first_bad.call is None and first_bad.parse_error


def test_text_answer_is_no_call_and_no_error():
    turn = policy(Recorder(vllm_response(content="I am done thinking."))).act(MESSAGES, TOOLS)
    assert (turn.call, turn.parse_error) == (None, "")
    assert turn.message == {"role": "assistant", "content": "I am done thinking."}


def test_tagged_call_in_text_is_read_when_no_parser_matched():
    text = 'Listing.\n<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>'
    turn = policy(Recorder(vllm_response(content=text))).act(MESSAGES, TOOLS)
    assert turn.call is not None and turn.call.arguments == {"command": "ls"}
    assert turn.message["content"] == text
    assert turn.message["tool_calls"][0]["id"] == turn.call.id
    assert json.loads(turn.message["tool_calls"][0]["function"]["arguments"]) == {"command": "ls"}
    off = policy(Recorder(vllm_response(content=text)), text_tool_calls=False).act(MESSAGES, TOOLS)
    assert off.call is None


def test_server_without_token_fields():
    answer = {
        "id": "x",
        "object": "chat.completion",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
        ],
    }
    turn = policy(Recorder(answer)).act(MESSAGES, [])
    assert turn.prompt_token_ids is None and turn.completion_token_ids is None
    assert turn.logprobs is None and turn.usage == {}


def test_token_ids_from_return_tokens_as_token_ids():
    answer = vllm_response(content="ok", logprobs=[-0.1, -0.2])
    answer["choices"][0]["logprobs"]["content"][0]["token"] = "token_id:11"
    answer["choices"][0]["logprobs"]["content"][1]["token"] = "token_id:12"
    turn = policy(Recorder(answer)).act(MESSAGES, TOOLS)
    assert turn.completion_token_ids == [11, 12]


def test_no_tools_sends_no_tool_choice():
    handler = Recorder(vllm_response(content="ok"))
    policy(handler, seed=None).act(MESSAGES, [])
    body = handler.body()
    assert "tools" not in body and "tool_choice" not in body and "seed" not in body


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ('{"command": "ls"', "not JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('"ls"', "must be a JSON object"),
    ],
)
def test_malformed_arguments_give_a_parse_error(arguments, problem):
    bad = vllm_call("bash", arguments)
    turn = policy(Recorder(vllm_response(tool_calls=[bad]))).act(MESSAGES, TOOLS)
    assert turn.call is None
    assert problem in turn.parse_error
    assert "tool_calls" not in turn.message  # no call left without its result
    assert arguments in turn.message["content"]  # the model sees what it said


def test_a_call_without_a_name_gives_a_parse_error():
    bad = {"id": "c1", "type": "function", "function": {"arguments": "{}"}}
    turn = policy(Recorder(vllm_response(content="hm", tool_calls=[bad]))).act(MESSAGES, TOOLS)
    assert turn.call is None and "name" in turn.parse_error
    assert turn.message["content"].startswith("hm\n")


def test_dict_arguments_and_missing_id_are_normalized():
    raw = {"type": "function", "function": {"name": "bash", "arguments": {"command": "ls"}}}
    turn = policy(Recorder(vllm_response(tool_calls=[raw]))).act(MESSAGES, TOOLS)
    assert turn.call is not None and turn.call.id
    wire = turn.message["tool_calls"][0]
    assert wire["id"] == turn.call.id
    assert wire["function"]["arguments"] == '{"command": "ls"}'


def test_refused_optional_field_is_dropped_and_the_request_repeated():
    refusal = httpx.Response(
        422, json={"detail": "Unexpected fields in the request: {'return_token_ids'}"}
    )
    handler = Recorder(refusal, vllm_response(content="a"), vllm_response(content="b"))
    pol = policy(handler, max_retries=0)
    turn = pol.act(MESSAGES, TOOLS)
    assert turn.message["content"] == "a" and turn.retries == 1
    assert "return_token_ids" in handler.body(0) and "return_token_ids" not in handler.body(1)
    assert pol.act(MESSAGES, TOOLS).retries == 0
    assert "return_token_ids" not in handler.body(2)


def test_body_that_is_not_json_is_retried_then_fails():
    handler = Recorder(*[httpx.Response(200, content=b"<html>oops</html>")] * 3)
    with pytest.raises(gym.PolicyError, match="not JSON"):
        policy(handler, max_retries=2).act(MESSAGES, TOOLS)
    assert len(handler.requests) == 3


def test_answer_without_choices_is_retried():
    handler = Recorder({"choices": []}, vllm_response(content="ok"))
    assert policy(handler).act(MESSAGES, TOOLS).retries == 1


def test_extra_body_and_params():
    handler = Recorder(vllm_response(content="ok"))
    pol = policy(
        handler, api_key="secret", temperature=1.0, extra_body={"top_k": 20, "max_tokens": 64}
    )
    pol.act(MESSAGES, TOOLS)
    body = handler.body()
    assert body["top_k"] == 20 and body["max_tokens"] == 64 and body["temperature"] == 1.0
    params = pol.params()
    assert params["model"] == "served-model" and params["temperature"] == 1.0
    assert "secret" not in json.dumps(params)
    pol.close()


@pytest.mark.parametrize("status", [401, 403, 404, 400, 413])
def test_client_errors_fail_at_once_with_a_hint(status):
    handler = Recorder(
        httpx.Response(status, json={"error": {"message": f"nope {status}", "code": status}})
    )
    with pytest.raises(gym.PolicyError, match=f"HTTP {status}: nope {status}"):
        policy(handler, max_retries=5).act(MESSAGES, TOOLS)
    assert len(handler.requests) == 1


def test_bad_base_url_is_a_config_error():
    with pytest.raises(gym.ConfigError, match="http://"):
        gym.OpenAIPolicy("m", base_url="localhost:8000/v1")


def test_retry_after_parsing():
    assert retry_after(None) is None and retry_after("") is None
    assert retry_after("3") == 3.0 and retry_after(" 0 ") == 0.0 and retry_after("-5") == 0.0
    assert retry_after("soon") is None
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 < (retry_after(when) or 0) <= 30
    past = format_datetime(datetime.now(UTC) - timedelta(seconds=30), usegmt=True)
    assert retry_after(past) == 0.0


def test_backoff_is_capped_and_honours_retry_after():
    pol = policy(Recorder(), backoff=1.0, max_backoff=4.0)
    waits = [pol._delay(n, None) for n in range(1, 20)]
    assert all(0 <= w <= 4.0 for w in waits)
    assert pol._delay(1, 3.0) >= 3.0
    assert pol._delay(1, 3600.0) == 4.0
    start = time.monotonic()
    assert pol._delay(1, 0.0) <= 1.0 and time.monotonic() - start < 0.1


def test_reasoning_is_kept_apart_and_the_models_argument_text_is_kept():
    call = vllm_call("bash", '{"command":"ls"}')  # compact, as the model wrote it
    answer = vllm_response(tool_calls=[call])
    answer["choices"][0]["message"]["reasoning"] = "I should list the files."
    turn = policy(Recorder(answer)).act(MESSAGES, TOOLS)
    assert turn.reasoning == "I should list the files."
    assert "reasoning" not in turn.message  # some servers refuse it in later requests
    assert turn.message["tool_calls"][0]["function"]["arguments"] == '{"command":"ls"}'


def test_unconstrained_asks_for_auto():
    handler = Recorder(vllm_response(content="ok"))
    pol = policy(handler, constrained=False)
    pol.act(MESSAGES, TOOLS)
    assert handler.body()["tool_choice"] == "auto"
    assert pol.params()["constrained"] is False


def test_server_refusing_required_gets_auto_from_then_on():
    # vLLM before 0.8.3 answered: tool_choice = "required" is not supported!
    refusal = httpx.Response(
        400,
        json={
            "object": "error",
            "message": 'tool_choice = "required" is not supported!',
            "type": "BadRequestError",
            "code": 400,
        },
    )
    call = vllm_call("bash", {"command": "ls"})
    handler = Recorder(refusal, vllm_response(tool_calls=[call]), vllm_response(content="b"))
    pol = policy(handler, max_retries=0)
    turn = pol.act(MESSAGES, TOOLS)
    assert turn.call is not None and turn.retries == 1
    assert [handler.body(i)["tool_choice"] for i in (0, 1)] == ["required", "auto"]
    assert pol.act(MESSAGES, TOOLS).retries == 0
    assert handler.body(2)["tool_choice"] == "auto"


def test_other_refusals_naming_tool_choice_still_fail():
    # "auto" refused (vLLM without --enable-auto-tool-choice): no loop, a PolicyError
    refusal = httpx.Response(
        400,
        json={"message": '"auto" tool choice requires --enable-auto-tool-choice', "code": 400},
    )
    handler = Recorder(refusal)
    with pytest.raises(gym.PolicyError, match="enable-auto-tool-choice"):
        policy(handler, constrained=False, max_retries=3).act(MESSAGES, TOOLS)
    assert len(handler.requests) == 1


# -- a hostile server: every answer is read bounded, and nothing but PolicyError escapes -----

DEEP = 100_000
DEEP_ARGS = '{"a":' * DEEP + "1" + "}" * DEEP


def test_arguments_nested_100000_levels_deep_give_a_parse_error():
    bad = vllm_call("bash", DEEP_ARGS)
    turn = policy(Recorder(vllm_response(tool_calls=[bad]))).act(MESSAGES, TOOLS)
    assert turn.call is None and "deeper than" in turn.parse_error
    assert "tool_calls" not in turn.message
    json.dumps(turn.message)  # the conversation stays storable


def test_a_tagged_deep_call_in_the_text_gives_a_parse_error():
    text = '<tool_call>{"name": "bash", "arguments": ' + DEEP_ARGS + "}</tool_call>"
    turn = policy(Recorder(vllm_response(content=text))).act(MESSAGES, TOOLS)
    assert turn.call is None and "deeper than" in turn.parse_error


@pytest.mark.parametrize(
    "tool_calls",
    [{"function": {"name": "bash", "arguments": "{}"}}, "bash", 7],
    ids=["dict", "str", "int"],
)
def test_tool_calls_that_are_not_a_list_give_a_parse_error(tool_calls):
    answer = vllm_response(content="hm")
    answer["choices"][0]["message"]["tool_calls"] = tool_calls
    turn = policy(Recorder(answer)).act(MESSAGES, TOOLS)
    assert turn.call is None and "not a list" in turn.parse_error


def test_odd_usage_and_token_fields_are_left_out():
    answer = vllm_response(content="ok")
    answer["usage"] = ["not", "a", "dict"]
    answer["prompt_token_ids"] = {"a": 1}
    turn = policy(Recorder(answer)).act(MESSAGES, TOOLS)
    assert turn.usage == {} and turn.prompt_token_ids is None


@pytest.mark.parametrize(
    "body",
    [
        b'{"choices": ' + b"[" * DEEP + b"]" * DEEP + b"}",
        b'{"choices": [{"message": {"role": "assistant", "content": NaN}}]}',
        b'{"choices": [], "n": ' + b"7" * 5000 + b"}",
        b"\xff\xfe{}",
    ],
    ids=["deep", "nan", "long-int", "not-utf8"],
)
def test_a_body_no_json_reader_should_take_is_retried_then_fails_cleanly(body):
    handler = Recorder(*[httpx.Response(200, content=body)] * 2)
    with pytest.raises(gym.PolicyError, match="not JSON"):
        policy(handler, max_retries=1).act(MESSAGES, TOOLS)
    assert len(handler.requests) == 2


@pytest.mark.parametrize(
    "body",
    [b"[" * DEEP, b'{"error": ' + b"[" * 900 + b"]" * 900 + b"}", b"\xff" * 10],
    ids=["deep", "nested", "binary"],
)
def test_an_error_body_of_any_shape_gives_a_policy_error(body):
    handler = Recorder(httpx.Response(400, content=body))
    with pytest.raises(gym.PolicyError, match="HTTP 400"):
        policy(handler, max_retries=0).act(MESSAGES, TOOLS)
