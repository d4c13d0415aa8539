"""A vLLM stand-in on localhost that enforces a context length and reports usage.

`ContextServer` counts a prompt as vLLM would with a byte-level tokenizer of 4 bytes a
token (the JSON of the messages and tools, over 4: never more tokens than bytes).
A request whose prompt and ``max_tokens`` exceed ``context`` gets vLLM's answer: HTTP
400 "This model's maximum context length is ...". Others get ``answer(body)`` (an
assistant message) with ``usage``, or HTTP 400 with an unrelated message when
``refuse(body)`` says so. ``GET /v1/models`` lists the model with ``max_model_len``
when ``listed`` (vLLM), without it otherwise (a server that does not say).
``POST /tokenize`` (at the root, as vLLM serves it) answers the same count of a chat
request's prompt when ``tokenize`` is True, else 404 (a server without it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from typing import Any

from models_server import JsonHandler, LocalServer

MODEL = "served-model"


def call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    """An assistant message with one tool call, as vLLM writes it."""
    wire = {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return {"role": "assistant", "content": None, "tool_calls": [wire]}


def prompt_tokens(body: dict[str, Any]) -> int:
    """The prompt's tokens in this stand-in: its messages' and tools' JSON over 4."""
    return len(json.dumps(body["messages"]) + json.dumps(body.get("tools", []))) // 4


class ContextServer(LocalServer):
    """Answers chat completions within a context of ``context`` tokens."""

    def __init__(
        self,
        answer: Callable[[dict[str, Any]], dict[str, Any]],
        *,
        context: int,
        listed: bool = True,
        refuse: Callable[[dict[str, Any]], bool] | None = None,
        tokenize: bool = True,
    ) -> None:
        self.answer, self.context, self.listed, self.refuse = answer, context, listed, refuse
        self.tokenize = tokenize
        self.gets: list[str] = []
        self.posts: list[dict[str, Any]] = []
        self.statuses: list[int] = []
        self.tokenized: list[dict[str, Any]] = []  # the /tokenize requests, answered or not
        owner = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:
                owner.gets.append(self.path)
                model: dict[str, Any] = {"id": MODEL, "object": "model", "owned_by": "vllm"}
                if owner.listed:
                    model["max_model_len"] = owner.context
                self._send(200, {"object": "list", "data": [model]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
                if self.path == "/tokenize":
                    owner.tokenized.append(body)
                    self._send(*owner.count(body))
                    return
                owner.posts.append(body)
                status, payload = owner.reply(body)
                owner.statuses.append(status)
                self._send(status, payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True

    def count(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The status and body answering ``POST /tokenize`` (vLLM's fields, no token ids)."""
        if not self.tokenize:
            return 404, {"detail": "Not Found"}
        return 200, {"count": prompt_tokens(body), "max_model_len": self.context, "tokens": []}

    def reply(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The status and body answering one chat completion request."""
        prompt, answer = prompt_tokens(body), int(body["max_tokens"])
        if prompt + answer > self.context:
            message = (
                f"This model's maximum context length is {self.context} tokens. However, you "
                f"requested {prompt + answer} tokens ({prompt} in the messages, {answer} in "
                "the completion). Please reduce the length of the messages or completion."
            )
            return 400, {"object": "error", "message": message, "type": "BadRequestError"}
        if self.refuse is not None and self.refuse(body):
            return 400, {"object": "error", "message": "bad request", "type": "BadRequestError"}
        message = self.answer(body)
        completion = len(json.dumps(message)) // 4
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
        return 200, {"object": "chat.completion", "choices": [choice], "usage": usage}
