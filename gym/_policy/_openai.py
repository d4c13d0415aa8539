r"""A policy served by any OpenAI-compatible ``/v1/chat/completions`` endpoint (vLLM first).

One request per turn, with native tool calls (``tools``). Structured decoding by
default: ``tool_choice="required"``, which vLLM (0.8.3 and later) and OpenAI serve by
constraining generation to a call of one of the tools with arguments valid against its
schema (vLLM builds the JSON schema of a list of ``{"name", "parameters"}`` objects and
decodes under it with its structured-output backend, with no tool parser needed). A
server that refuses ``"required"`` (a 400/422 naming ``tool_choice``) gets the request
again with ``tool_choice="auto"``, and the policy keeps sending ``"auto"``;
``constrained=False`` sends ``"auto"`` from the start.
Token-in/token-out for training: the request asks for ``logprobs`` and, the vLLM
way, ``return_token_ids``; vLLM (0.10.2 and later) then answers with the prompt's token
ids (``prompt_token_ids``, top level), the sampled ids (``choices[0].token_ids``) and
their log-probabilities (``choices[0].logprobs.content[].logprob``). Servers that
return none of them are fine: the turn's token fields stay None. A server that rejects
one of these optional fields with a 400/422 naming it (``transformers serve`` rejects
``return_token_ids``) gets the same request again without that field, and the policy
stops sending it.

What a well-formed answer carries is the model's, read into a turn whatever it is: a
lone surrogate (valid JSON, ``"\ud800"``, no UTF-8 text) anywhere in it becomes U+FFFD
where the answer is read, so the conversation can be sent again; log-probabilities that
are not finite floats, and usage counts outside [0, 2**53), are absent.

Failures: connection errors, timeouts, 429 and 5xx are retried with exponential
backoff and full jitter, waiting at least what ``Retry-After`` asks (seconds or an HTTP
date, capped at ``max_backoff``); other 4xx fail at once. ``timeout`` bounds the whole
answer, not only each read (a server trickling it is timed out). Either way, once
retries are spent the policy raises `gym.PolicyError` (the rollout records an
infra_error episode). A failed request never becomes a turn; the seconds the failed
attempts and their waits took are the turn's ``waited_s``, which the rollout leaves out
of the episode's time budget.

A conversation that outgrows the model's context is the agent's doing, not the
policy's: a 400/413/422 to a request that could exceed the context raises `ContextFull`
instead, and the rollout ends the episode truncated and grades it; never before the
model's first answer (the task's prompt, the tools and ``max_tokens`` are not the
agent's: that refusal is a `PolicyError`, with a hint). Measured, never read
from the server's message: the context is ``context_tokens``, else the ``max_model_len``
the server lists for the model at ``GET /models`` (vLLM), asked once at the first
refusal. The prompt is counted by the server where it can: vLLM's ``POST /tokenize``
(at the server's root, beside ``/v1``) renders the same messages and tools through the
model's chat template and answers their exact ``count``. Elsewhere (no ``/tokenize``, or
it fails) the prompt is bounded above by the ``usage.prompt_tokens`` of the
conversation's last answered request plus, for each message after it, the UTF-8 bytes
of its text as the template renders it (content as is, not JSON-escaped; a byte-level
BPE token covers at least one byte) and `MESSAGE_OVERHEAD`; that bound exceeds the true
count at most by the tokenizer's longest token in bytes, as a factor (text of long
tokens, runs of spaces, is counted the most over). Either count is capped by the bytes
bound of the whole conversation, which holds whatever the server says (an absurd count
or usage cannot make a conversation that fits look full). A refusal when the prompt and
``max_tokens`` surely fit, or when the context is unknown, stays a `PolicyError`.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import random
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gym._core._errors import ConfigError, PolicyError
from gym._core._http import (
    Backoff,
    RetriesSpent,
    Retryable,
    post_json,
    server_message,
    tls_context,
)
from gym._core._text import plain
from gym._core._tools import ARGUMENTS, Bounds, ToolCall, check_name, decode_arguments, load_json
from gym._policy._base import ContextFull, Policy, Turn, counts
from gym._policy._parse import parse_tool_call

if TYPE_CHECKING:
    import httpx  # imported where a request is made: `import gym` stays light

__all__ = ["OpenAIPolicy"]

RESPONSE = Bounds(depth=64, items=0, chars=64 << 20)
"""What one answer may be: 64 MiB of JSON nested at most 64 levels (an answer's own
structure is about 8 deep; a call's arguments sent as an object add theirs). Measured
before it is parsed; what breaks it is an answer to retry, never an exception."""
CHECK_CONNECT_S = 5.0
"""Seconds `OpenAIPolicy.check` waits for a connection to the server."""
CHECK_READ_S = 15.0
"""Seconds `OpenAIPolicy.check` waits for the list of models once connected."""
MESSAGE_OVERHEAD = 32
"""Tokens a chat template may add around one message (role markers, separators,
a tool result's wrapping), at most: added to each message's bytes in the prompt bound."""
_NOT_SERVED = (404, 405, 501)
"""The statuses of a server that has no ``/tokenize``: asked no more."""
_TOKENIZE_FIELDS = (
    "tools",
    "add_generation_prompt",
    "continue_final_message",
    "add_special_tokens",
    "chat_template",
    "chat_template_kwargs",
)
"""Fields of the refused request that shape its prompt, sent again to ``/tokenize``."""
_LENGTH_STATUSES = (400, 413, 422)
"""The statuses a server refuses a request too long for the context with (vLLM: 400)."""
_OPTIONAL_FIELDS = ("return_token_ids", "logprobs", "top_logprobs", "seed")
_REQUIRED = "tool_choice=required"  # in _dropped once a server refused it
_TOKEN_ID = re.compile(r"^token_id:(\d+)$")
_ids = itertools.count(1)


class OpenAIPolicy(Policy):
    """A model behind an OpenAI-compatible chat completions endpoint.

    Sampling settings are always sent explicitly (``temperature`` and ``top_p``):
    servers differ in their defaults (vLLM applies the model's generation_config.json
    unless told otherwise), and run lineage must say what was used. The default,
    temperature 0, suits evaluation; sample at 1.0 for RL groups.

    Several tool calls in one answer (parallel calls): the turn's ``calls`` holds them
    all, in order, and the rollout executes each. Malformed tool calls (arguments that
    are not a JSON object, a missing name) are not executed: the first malformed one
    and those after it leave the message's ``tool_calls`` and are appended to its text
    as the model wrote them (so every tool call in the conversation has its tool
    result, and the model sees what it said); when the first call is malformed the turn
    has no call and a ``parse_error``.
    When a server returns no native call but the text holds a ``<tool_call>`` block
    (a tool parser that did not match), that block is read as the call.

    Args:
        model: the served model name (vLLM's ``--served-model-name``).
        base_url: the API root, ending in ``/v1``.
        api_key: bearer token; ``$OPENAI_API_KEY`` when None (none sent if unset).
        temperature: sampling temperature (0 = greedy).
        top_p: nucleus sampling mass.
        max_tokens: the most tokens one answer may have.
        timeout: seconds to wait for the whole answer of one request, from its start
            (each read, and the answer as a whole: a non-streaming server sends nothing
            until the answer is complete, and one trickling it is timed out too).
        connect_timeout: seconds to open a connection.
        max_retries: failed attempts tolerated per turn before PolicyError.
        backoff: first backoff ceiling in seconds (doubles per attempt, full jitter).
        max_backoff: the longest wait between attempts, Retry-After included.
        seed: sampling seed sent with each request (None: not sent).
        logprobs: ask for the sampled tokens' log-probabilities.
        return_token_ids: ask for prompt and completion token ids (vLLM).
        text_tool_calls: read a ``<tool_call>`` block from the text when the server
            returned no native call.
        constrained: ask for structured decoding of a tool call
            (``tool_choice="required"``) when tools are offered; False sends ``"auto"``.
        context_tokens: the model's context in tokens (prompt and answer); None: the
            ``max_model_len`` the server lists at ``GET /models``, if it does. Known, a
            refusal of a request that could exceed it ends the episode truncated
            (`ContextFull`) instead of as an infra_error.
        extra_body: more request fields, merged last (e.g. ``{"top_k": 20}``).
        headers: more HTTP headers.
        transport: an httpx transport (tests use `httpx.MockTransport`).
    """

    name = "openai"

    def __init__(
        self,
        model: str,
        base_url: str = "http://localhost:8000/v1",
        *,
        api_key: str | None = None,
        temperature: float = 0.0,
        top_p: float = 1.0,
        max_tokens: int = 1024,
        timeout: float = 120.0,
        connect_timeout: float = 10.0,
        max_retries: int = 5,
        backoff: float = 1.0,
        max_backoff: float = 60.0,
        seed: int | None = None,
        logprobs: bool = True,
        return_token_ids: bool = True,
        text_tool_calls: bool = True,
        constrained: bool = True,
        context_tokens: int | None = None,
        extra_body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url {base_url!r} must start with http:// or https://")
        if max_retries < 0 or backoff < 0 or max_backoff < 0 or timeout <= 0:
            raise ConfigError("max_retries, backoff and max_backoff must be >= 0, timeout > 0")
        if context_tokens is not None and context_tokens <= 0:
            raise ConfigError(f"context_tokens must be > 0, not {context_tokens}")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.temperature = temperature
        self.top_p = top_p
        self.max_tokens = max_tokens
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.seed = seed
        self.logprobs = logprobs
        self.return_token_ids = return_token_ids
        self.text_tool_calls = text_tool_calls
        self.constrained = constrained
        self.context_tokens = context_tokens
        self.extra_body = dict(extra_body or {})
        self._dropped: set[str] = set()
        self._listed: int | None = None  # the server's max_model_len, once asked
        self._context_asked = context_tokens is not None
        self._tokenizes = True  # until the server says it has no /tokenize
        # the last answered request: its messages, tools and prompt tokens (the server's)
        self._counted: tuple[list[dict[str, Any]], list[dict[str, Any]], int] | None = None
        self._random = random.Random()
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        auth = {"Authorization": f"Bearer {key}"} if key else {}
        import httpx

        self._client = httpx.Client(
            base_url=self.base_url,
            headers={**auth, **(headers or {})},
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            transport=transport,
            verify=tls_context(),
        )

    def params(self) -> dict[str, Any]:
        """Model, endpoint and sampling settings (never the API key)."""
        return {
            "model": self.model,
            "base_url": self.base_url,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "constrained": self.constrained,
            "context_tokens": self.context_tokens,
            "extra_body": self.extra_body,
        }

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()

    def check(self, *, flags: str = "--") -> None:
        """Ask the server once, briefly, which models it serves (``GET /models``).

        A run calls this before it stores anything, so that a server that is not up
        fails the command at once instead of each episode after its retries. A server
        that answers without a list of models (no ``/models``, an error status) passes:
        its chat requests say more. The ``max_model_len`` a vLLM list gives the model is
        kept as its context (when ``context_tokens`` is None).

        Args:
            flags: the prefix of the options the error names (``--base-url``,
                ``--user-base-url``...).

        Raises:
            PolicyError: nothing answers at the base URL (refused, unresolved, no
                connection within `CHECK_CONNECT_S`, no answer within `CHECK_READ_S`).
            ConfigError: the server lists its models and this policy's is not one.
        """
        import httpx

        timeout = httpx.Timeout(CHECK_READ_S, connect=CHECK_CONNECT_S)
        try:
            response = self._client.get("/models", timeout=timeout)
        except httpx.TransportError as exc:
            raise PolicyError(
                f"no model server answers at {self.base_url} ({_unreached(exc)}): "
                f"start it, or pass {flags}base-url"
            ) from None
        if not self._context_asked:
            self._context_asked = True
            self._listed = _model_context(response, self.model)
        served = _served(response)
        if served and not _serves(served, self.model):
            shown = ", ".join(served[:5]) + (f" and {len(served) - 5} more" if served[5:] else "")
            raise ConfigError(
                f"the model server at {self.base_url} serves no model {self.model!r} "
                f"(it serves {shown}): pass {flags}model with one of them"
            )

    # -- one turn ------------------------------------------------------------------------

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        """Ask the endpoint for the next assistant message and read its tool call."""
        start = time.monotonic()
        data, failures, waited = self._complete(messages, tools)
        choice = data["choices"][0]
        raw = choice["message"]
        message, calls, error = self._read_message(raw, [_tool_name(t) for t in tools])
        reasoning = raw.get("reasoning") or raw.get("reasoning_content")
        usage = _usage(data.get("usage"))
        prompt = usage.get("prompt_tokens")
        self._counted = (list(messages), tools, prompt) if prompt is not None else None
        return Turn(
            message=message,
            calls=calls,
            parse_error=error,
            reasoning=reasoning if isinstance(reasoning, str) else "",
            prompt_token_ids=_ints(data.get("prompt_token_ids"))
            or _ints(choice.get("prompt_token_ids")),
            completion_token_ids=_ints(choice.get("token_ids")) or _logprob_ids(choice),
            logprobs=_logprobs(choice),
            usage=usage,
            latency_s=time.monotonic() - start,
            retries=failures,
            waited_s=waited,
        )

    def request_body(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """The JSON body of one chat completions request."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
        }
        if tools:
            body["tools"] = tools
            required = self.constrained and _REQUIRED not in self._dropped
            body["tool_choice"] = "required" if required else "auto"
        if self.logprobs:
            body["logprobs"] = True
        if self.return_token_ids:
            body["return_token_ids"] = True
        if self.seed is not None:
            body["seed"] = self.seed
        body.update(self.extra_body)
        for field in self._dropped:
            body.pop(field, None)
        return body

    def _complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> tuple[dict[str, Any], int, float]:
        """The response JSON, how many attempts failed before it, and the seconds they took.

        Those seconds run from the first attempt to the start of the answered one: the
        failed attempts and the waits after them (the server's failures, not the model's
        time).
        """
        start = time.monotonic()
        last = [start]  # when the latest attempt began

        def body() -> dict[str, Any]:
            last[0] = time.monotonic()
            return self.request_body(messages, tools)

        try:
            data, failures = post_json(
                self._client,
                "/chat/completions",
                body,
                lambda response: self._read(response, messages, tools),
                self._backoff(),
            )
            return data, failures, last[0] - start
        except RetriesSpent as exc:
            raise PolicyError(
                f"POST {self.base_url}/chat/completions {exc}; is the server up and serving "
                f"{self.model!r}? Check GET {self.base_url}/models"
            ) from None

    def _read(
        self,
        response: httpx.Response,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
    ) -> dict[str, Any]:
        """The answer's JSON; a 4xx goes to `_reject` with the body that was sent."""
        if response.status_code >= 400:
            body = json.loads(response.request.content)
            self._reject(response, body, lambda: self._prompt_tokens(body, messages, tools))
        return _valid_json(response)

    def _reject(
        self,
        response: httpx.Response,
        body: dict[str, Any],
        measure: Callable[[], tuple[int, bool]],
    ) -> None:
        """Drop an optional field the server refused (then retry), or raise PolicyError.

        `ContextFull` when the request could exceed the context (``measure``: its
        prompt's tokens, and whether the server counted them or they are a bound) and
        the model has answered in this conversation: a full context is the agent's only
        when its own turns filled it. A refusal of a conversation the model has not yet
        answered (the task's prompt, the tools, ``max_tokens``) is a `PolicyError`,
        with a hint when that could exceed the context.
        """
        text = server_message(response)
        if response.status_code in (400, 422):
            refused = [f for f in _OPTIONAL_FIELDS if f in body and f in text]
            if body.get("tool_choice") == "required" and "tool_choice" in text:
                refused.append(_REQUIRED)  # no structured decoding there: ask for "auto"
            if refused:
                self._dropped.update(refused)
                reason = f"HTTP {response.status_code}: server refused {refused}"
                raise Retryable(reason, 0.0, counts=False)
        if response.status_code in _LENGTH_STATUSES and (context := self._context()):
            answer = max(_int(body.get("max_tokens")), _int(body.get("max_completion_tokens")))
            prompt, counted = measure()
            if prompt + answer > context:
                size = (
                    f"of {prompt} tokens (the server's count)"
                    if counted
                    else (f"of up to {prompt} tokens")
                )
                could = (
                    f"a request that could exceed the model's context ({context} tokens): "
                    f"a prompt {size} and an answer of up to {answer}"
                )
                where = f"{self.base_url}/chat/completions answered HTTP {response.status_code}"
                if not _answered(body.get("messages")):
                    raise PolicyError(
                        f"{where} to the first request of the conversation, {could}: not the "
                        "agent's doing (lower max_tokens, or serve the model with a longer "
                        f"context); the server said: {text}"
                    )
                raise ContextFull(f"{where} to {could}", context_tokens=context)
        raise PolicyError(
            f"{self.base_url}/chat/completions answered HTTP {response.status_code}: {text}"
            f" ({_hint(response.status_code, text, self.base_url)})"
        )

    def _context(self) -> int | None:
        """The model's context in tokens: ``context_tokens``, else what the server lists.

        The server is asked once (``GET /models``), at the first refusal; a server that
        lists no ``max_model_len`` for the model leaves it unknown (None).
        """
        if not self._context_asked:
            self._context_asked = True
            import httpx

            timeout = httpx.Timeout(CHECK_READ_S, connect=CHECK_CONNECT_S)
            try:
                response = self._client.get("/models", timeout=timeout)
            except httpx.HTTPError:
                return None
            self._listed = _model_context(response, self.model)
        return self.context_tokens or self._listed

    def _prompt_tokens(
        self, body: dict[str, Any], messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> tuple[int, bool]:
        """The tokens of a refused request's prompt, and whether the server counted them.

        The server's count at ``/tokenize`` when it gives one, else `_prompt_bound`; never
        more than the bytes of the whole conversation (`_bytes_bound`), a bound that
        holds whatever the server says.
        """
        most = _bytes_bound(messages, tools)
        count = self._tokenized(body)
        if count is not None and count <= most:
            return count, True
        return min(self._prompt_bound(messages, tools), most), False

    def _tokenized(self, body: dict[str, Any]) -> int | None:
        """The prompt's exact tokens by the server's ``POST /tokenize`` (vLLM), if it answers.

        The request's messages, model and template fields, at the server's root. A 404
        (no such route) stops the asking; any other failure leaves this prompt uncounted.
        """
        if not self._tokenizes:
            return None
        import httpx

        root = self.base_url.removesuffix("/v1")
        ask = {"model": body.get("model", self.model), "messages": body.get("messages", [])}
        ask.update({k: body[k] for k in _TOKENIZE_FIELDS if k in body})
        try:
            response = self._client.post(
                f"{root}/tokenize",
                json=ask,
                timeout=httpx.Timeout(CHECK_READ_S, connect=CHECK_CONNECT_S),
            )
        except httpx.HTTPError:
            return None
        if response.status_code in _NOT_SERVED:
            self._tokenizes = False
            return None
        if response.status_code != 200:
            return None
        try:
            data = load_json(response.content, "the token count", RESPONSE, check=False)
        except ValueError:
            return None
        count = data.get("count") if isinstance(data, dict) else None
        return count if type(count) is int and count > 0 else None

    def _prompt_bound(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
        """An upper bound on the tokens of the prompt these messages and tools make.

        What the server counted for the last answered request, when these messages
        begin with its and the tools are its, plus each message after those by its
        text's bytes (`_message_bound`); else every message so and the tools by their
        JSON's bytes.
        """
        if self._counted is not None:
            counted, counted_tools, tokens = self._counted
            n = len(counted)
            if len(messages) > n and messages[:n] == counted and tools == counted_tools:
                return tokens + sum(_message_bound(m) for m in messages[n:])
        return _bytes_bound(messages, tools)

    def _backoff(self) -> Backoff:
        return Backoff(self.max_retries, self.backoff, self.max_backoff, self._random)

    def _delay(self, failures: int, retry_after_s: float | None) -> float:
        return self._backoff().delay(failures, retry_after_s)

    # -- reading the answer --------------------------------------------------------------

    def _read_message(
        self, raw: dict[str, Any], tool_names: list[str]
    ) -> tuple[dict[str, Any], list[ToolCall], str]:
        """The message to append, the calls to execute and the parse error."""
        content = raw.get("content")
        message: dict[str, Any] = {"role": "assistant", "content": content}
        calls = raw.get("tool_calls") or []
        if not isinstance(calls, list):
            message["content"] = _with_text(content, _raw_call_text(calls))
            return message, [], "Your tool calls were not a list; call one tool at a time."
        if not calls:
            return self._text_call(message, tool_names)
        read: list[ToolCall] = []
        wires: list[dict[str, Any]] = []
        for i, native in enumerate(calls):
            call, error = _native_call(native)
            if call is None:
                unread = "\n".join(_raw_call_text(c) for c in calls[i:])
                message["content"] = _with_text(content, unread[:_SHOWN])
                if not read:
                    return message, [], error
                break
            call = call.model_copy(update={"id": call.id or f"call_{next(_ids)}"})
            args = native["function"].get("arguments")
            wires.append(call.wire(args if isinstance(args, str) else None))
            read.append(call)
        message["tool_calls"] = wires
        return message, read, ""

    def _text_call(
        self, message: dict[str, Any], tool_names: list[str]
    ) -> tuple[dict[str, Any], list[ToolCall], str]:
        content = message.get("content")
        if not self.text_tool_calls or not isinstance(content, str):
            return message, [], ""
        found = parse_tool_call(content, tool_names, fallbacks=False)
        if not found.calls:
            return message, [], found.error
        calls = [c.model_copy(update={"id": f"call_{next(_ids)}"}) for c in found.calls]
        message["tool_calls"] = [call.wire() for call in calls]
        return message, calls, ""


def _native_call(raw: Any) -> tuple[ToolCall | None, str]:
    """A native tool call read and checked: arguments must be a bounded JSON object."""
    fn = raw.get("function") if isinstance(raw, dict) else None
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
        return None, "Your tool call has no function name; call one of the tools by name."
    try:
        check_name(fn["name"])
        args = decode_arguments(fn["name"], fn.get("arguments"))
    except ValueError as exc:
        return None, f"The {exc}; fix them." if str(exc).startswith("arguments") else f"{exc}."
    call_id = raw.get("id")
    return ToolCall(
        name=fn["name"], arguments=args, id=call_id if isinstance(call_id, str) else None
    ), ""


def _raw_call_text(raw: Any) -> str:
    """A call the model made that could not be used, as text it can see (bounded)."""
    fn = raw.get("function") if isinstance(raw, dict) else None
    if isinstance(fn, dict) and isinstance(fn.get("name"), str):
        args = fn.get("arguments")
        text = args if isinstance(args, str) else _dumped(args)
        body = f'{{"name": {json.dumps(fn["name"])}, "arguments": {text}}}'
        return f"<tool_call>\n{body[:_SHOWN]}\n</tool_call>"
    return f"<tool_call>\n{_dumped(raw)[:_SHOWN]}\n</tool_call>"


_SHOWN = ARGUMENTS.chars
"""Characters of an unusable call given back to the model as text, at most."""


def _dumped(value: Any) -> str:
    """JSON text of a value from the answer (bounded by `RESPONSE`: it always encodes)."""
    try:
        return json.dumps(value)[:_SHOWN]
    except (TypeError, ValueError, RecursionError):
        return '"<not shown: not plain JSON>"'


def _usage(value: Any) -> dict[str, int]:
    """The answer's token counts (`counts`: plausible whole numbers; the rest left out)."""
    return counts(value) if isinstance(value, dict) else {}


def _bytes_bound(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    """An upper bound on the prompt's tokens from its text alone, whatever a server says.

    Every message by its bytes (`_message_bound`), every tool by its JSON's, each with
    `MESSAGE_OVERHEAD`.
    """
    return sum(_message_bound(m) for m in messages) + sum(
        _json_bytes(tool) + MESSAGE_OVERHEAD for tool in tools
    )


def _answered(messages: Any) -> bool:
    """Whether a conversation holds a message of the model's (an assistant turn)."""
    return isinstance(messages, list) and any(
        isinstance(m, dict) and m.get("role") == "assistant" for m in messages
    )


def _message_bound(message: Any) -> int:
    """Tokens one message may take in a prompt, at most: the bytes its template renders.

    A chat template writes a message's text as it is: its content's UTF-8 bytes count
    (never its JSON escapes: a control byte is one byte, not six), each tool call's
    name and arguments (as sent, or as re-written by the template's ``tojson``, the
    longer), its other text fields; each message and each tool call adds
    `MESSAGE_OVERHEAD` for the template's markers. A byte-level BPE token covers at
    least one byte.
    """
    if not isinstance(message, dict):
        return _json_bytes(message) + MESSAGE_OVERHEAD
    total = MESSAGE_OVERHEAD
    for key, value in message.items():
        if key == "role" or value is None:
            continue
        if key == "content":
            total += _content_bytes(value)
        elif key == "tool_calls" and isinstance(value, list):
            total += sum(_call_bytes(call) + MESSAGE_OVERHEAD for call in value)
        elif isinstance(value, str):
            total += len(value.encode())
        else:
            total += _json_bytes(value)
    return total


def _content_bytes(content: Any) -> int:
    """The UTF-8 bytes of a message's content: its text, or its text parts' (joined)."""
    if isinstance(content, str):
        return len(content.encode())
    if isinstance(content, list):
        return sum(
            len(part["text"].encode()) + 1
            if isinstance(part, dict) and isinstance(part.get("text"), str)
            else _json_bytes(part)
            for part in content
        )
    return _json_bytes(content)


def _call_bytes(call: Any) -> int:
    """The bytes a template renders one tool call with: its name and its arguments."""
    fn = call.get("function") if isinstance(call, dict) else None
    if not isinstance(fn, dict):
        return _json_bytes(call)
    name, args = fn.get("name"), fn.get("arguments")
    text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str)
    try:  # the template may decode and re-dump them (tojson: ", " and ": ")
        again = len(json.dumps(json.loads(text), ensure_ascii=False).encode())
    except (ValueError, RecursionError):
        again = 0
    named = len(name.encode()) if isinstance(name, str) else _json_bytes(name)
    return named + max(len(text.encode()), again)


def _json_bytes(value: Any) -> int:
    """The UTF-8 bytes of a value's JSON text (escapes included)."""
    return len(json.dumps(value, ensure_ascii=False, default=str).encode())


def _int(value: Any) -> int:
    return value if type(value) is int and value > 0 else 0


def _with_text(content: Any, extra: str) -> str:
    return f"{content}\n{extra}" if isinstance(content, str) and content else extra


def _tool_name(schema: dict[str, Any]) -> str:
    fn = schema.get("function", schema)
    return str(fn.get("name", "")) if isinstance(fn, dict) else ""


def _ints(value: Any) -> list[int] | None:
    if isinstance(value, list) and value and all(type(v) is int for v in value):
        return list(value)
    return None


def _logprob_entries(choice: dict[str, Any]) -> list[Any]:
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    return content if isinstance(content, list) else []


def _logprobs(choice: dict[str, Any]) -> list[float] | None:
    """The sampled tokens' log-probabilities; None unless every one is a finite number."""
    values = [e.get("logprob") for e in _logprob_entries(choice) if isinstance(e, dict)]
    floats = [f for f in map(_finite, values) if f is not None]
    return floats if floats and len(floats) == len(values) else None


def _finite(value: Any) -> float | None:
    """A number from the answer as a finite float; None for anything else.

    A bool, a string, an integer past a float's range (``10**400``), infinity.
    """
    if type(value) not in (int, float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _logprob_ids(choice: dict[str, Any]) -> list[int] | None:
    """Token ids from ``token_id:N`` logprob tokens (vLLM's return_tokens_as_token_ids)."""
    tokens = [e.get("token") for e in _logprob_entries(choice) if isinstance(e, dict)]
    matches = [_TOKEN_ID.match(t) if isinstance(t, str) else None for t in tokens]
    if matches and all(matches):
        return [int(m.group(1)) for m in matches if m]
    return None


def _valid_json(response: httpx.Response) -> dict[str, Any]:
    """The body of a 2xx answer, checked to hold a first choice with a message.

    Bounded and total: a body too large or too deep, not JSON, or holding NaN is an
    answer to retry (`Retryable`), whatever a server sends.
    """
    try:
        data = load_json(response.content, "the body", RESPONSE, check=False)
    except ValueError as exc:
        status = response.status_code
        raise Retryable(f"HTTP {status} with a body that is not JSON we read: {exc}") from None
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise Retryable("the answer has no choices")
    if not isinstance(choices[0].get("message"), dict):
        raise Retryable("the answer's first choice has no message")
    return dict(_plain_json(data))


def _plain_json(value: Any) -> Any:
    r"""A decoded answer with every text made valid Unicode (`plain`), keys included.

    JSON may spell a lone surrogate (``"\ud800"``), which no UTF-8 text holds: read as
    it is, a model's words holding one made the next request's body unencodable (the
    whole run crashed). Replaced here with U+FFFD, where the answer is read, so that
    every reader of the model's text (the message, its calls' names, ids and arguments,
    a ``<tool_call>`` block, reasoning, a simulated user's reply) gets valid text;
    everything else stays as the server wrote it.
    """
    if isinstance(value, str):
        return plain(value)
    if isinstance(value, list):
        return [_plain_json(v) for v in value]
    if isinstance(value, dict):
        return {plain(k) if isinstance(k, str) else k: _plain_json(v) for k, v in value.items()}
    return value


def _unreached(exc: httpx.TransportError) -> str:
    """Why a server did not answer, in a few words (``connection refused``)."""
    import httpx

    if isinstance(exc, httpx.ConnectTimeout):
        return f"no connection in {CHECK_CONNECT_S:g} s"
    if isinstance(exc, httpx.TimeoutException):
        return f"no answer to GET /models in {CHECK_READ_S:g} s"
    first = (str(exc).strip().splitlines() or [""])[0]
    text = re.sub(r"^\[Errno -?\d+\]\s*", "", first)  # [Errno 111] Connection refused
    return text[:1].lower() + text[1:] if text else type(exc).__name__


def _serves(served: list[str], model: str) -> bool:
    """Whether a server listing ``served`` answers to ``model``.

    By its name, by its name without a tag (Ollama lists ``llama3:latest`` and answers
    ``llama3``), or through a wildcard route (LiteLLM lists ``openai/*``).
    """
    for name in served:
        if name == model or name.split(":")[0] == model:
            return True
        if name.endswith("*") and model.startswith(name[:-1]):
            return True
    return False


def _listed(response: httpx.Response) -> list[dict[str, Any]]:
    """The entries (each with a text ``id``) a ``GET /models`` answer lists."""
    if response.status_code != 200:
        return []
    try:
        data = load_json(response.content, "the model list", RESPONSE, check=False)
    except ValueError:
        return []
    entries = data.get("data") if isinstance(data, dict) else None
    return [
        e
        for e in (entries if isinstance(entries, list) else [])
        if isinstance(e, dict) and isinstance(e.get("id"), str)
    ]


def _served(response: httpx.Response) -> list[str] | None:
    """The model ids a ``GET /models`` answer lists; None when it lists none."""
    return [e["id"] for e in _listed(response)] or None


def _model_context(response: httpx.Response, model: str) -> int | None:
    """The ``max_model_len`` a ``GET /models`` answer lists for ``model`` (vLLM), if any."""
    for entry in _listed(response):
        size = entry.get("max_model_len")
        if type(size) is int and size > 0 and _serves([entry["id"]], model):
            return size
    return None


def _hint(status: int, text: str, base_url: str) -> str:
    if status in (401, 403):
        return "check api_key or $OPENAI_API_KEY"
    if status == 404:
        return f"check base_url (it ends in /v1) and the model name: GET {base_url}/models"
    if "tool" in text.lower():
        return (
            "for vLLM, tool_choice='auto' needs --enable-auto-tool-choice and "
            "--tool-call-parser matching the model"
        )
    if "context" in text.lower() or "too long" in text.lower():
        return "the conversation exceeds the model's context; lower the step budget or max_tokens"
    return "fix the request or the server settings"
