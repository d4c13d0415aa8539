"""A real HTTP server on localhost that answers chat completions from a script.

Responses are shaped as vLLM's OpenAI-compatible server writes them: the
``ChatCompletionResponse`` / ``ChatCompletionResponseChoice`` / ``ChatMessage`` /
``ToolCall`` models of vllm/entrypoints/openai/chat_completion/protocol.py and
vllm/entrypoints/openai/engine/protocol.py (vLLM 0.10.2 and later: ``token_ids`` per
choice and ``prompt_token_ids`` at the top level when the request sets
``return_token_ids``; tool call ids ``chatcmpl-tool-<hex>``; ``logprobs.content[]``
entries with token, logprob, bytes, top_logprobs).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer."""

    body: Any = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    raw: bytes | None = None


def vllm_call(name: str, arguments: Any) -> dict[str, Any]:
    """A tool call as vLLM serializes it (arguments as a JSON string)."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "id": f"chatcmpl-tool-{uuid.uuid4().hex}",
        "type": "function",
        "function": {"name": name, "arguments": args},
    }


def vllm_response(
    *,
    content: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    token_ids: list[int] | None = None,
    prompt_token_ids: list[int] | None = None,
    logprobs: list[float] | None = None,
    model: str = "served-model",
) -> dict[str, Any]:
    """A non-streaming chat completion exactly as vLLM's server returns one."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "refusal": None,
        "annotations": None,
        "audio": None,
        "function_call": None,
        "reasoning": None,
    }
    if tool_calls:  # ChatMessage drops an empty tool_calls list when serialized
        message["tool_calls"] = tool_calls
    lp = None
    if logprobs is not None:
        ids = token_ids or list(range(len(logprobs)))
        lp = {
            "content": [
                {"token": f"t{i}", "logprob": v, "bytes": [116], "top_logprobs": []}
                for i, v in zip(ids, logprobs, strict=True)
            ]
        }
    completion = len(token_ids) if token_ids else 3
    prompt = len(prompt_token_ids) if prompt_token_ids else 10
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": lp,
                "finish_reason": "tool_calls" if tool_calls else "stop",
                "stop_reason": None,
                "token_ids": token_ids,
                "routed_experts": None,
            }
        ],
        "service_tier": None,
        "system_fingerprint": None,
        "usage": {
            "prompt_tokens": prompt,
            "total_tokens": prompt + completion,
            "completion_tokens": completion,
            "prompt_tokens_details": None,
        },
        "prompt_logprobs": None,
        "prompt_token_ids": prompt_token_ids,
        "prompt_text": None,
        "kv_transfer_params": None,
    }


class StubServer:
    """Serves POST /v1/chat/completions from `script` (then `default`), records requests."""

    def __init__(self) -> None:
        self.script: list[Reply] = []
        self.default: Reply | Callable[[dict[str, Any]], Reply] | None = None
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.stop = threading.Event()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                stub.requests.append(body)
                stub.headers.append(dict(self.headers))
                reply = stub.next_reply(body)
                if reply.delay:
                    stub.stop.wait(reply.delay)
                payload = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def next_reply(self, body: dict[str, Any]) -> Reply:
        if self.script:
            return self.script.pop(0)
        if callable(self.default):
            return self.default(body)
        if self.default is not None:
            return self.default
        return Reply({"error": {"message": "no scripted reply left"}}, status=500)

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()
