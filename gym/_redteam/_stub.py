"""A scripted OpenAI-compatible chat server on localhost, for the policy-server faults.

It answers ``POST /v1/chat/completions`` from a list of replies (status, headers, delay),
then with a default that plays a task's reference solution one tool call per request.
The test suite has a fuller vLLM-shaped stub (tests/_policy/stub_server.py); this one
ships with the library so that ``gym redteam`` needs nothing from the tests.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from gym._core._tools import ToolCall

__all__ = ["Reply", "StubServer", "completion"]


@dataclass
class Reply:
    """One scripted answer: a JSON body with a status, headers, and a delay first."""

    body: Any = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


def completion(call: ToolCall) -> dict[str, Any]:
    """A chat completion whose message makes one tool call."""
    wire = {
        "id": f"call_{uuid.uuid4().hex[:12]}",
        "type": "function",
        "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
    }
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "model": "redteam-stub",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "tool_calls": [wire]},
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
    }


class StubServer:
    """Serves scripted replies; `requests` counts what it was asked."""

    def __init__(self, default: Callable[[dict[str, Any]], Reply]) -> None:
        self.script: list[Reply] = []
        self.default = default
        self.requests = 0
        self.stop = threading.Event()
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                reply = stub.next_reply(body)
                if reply.delay:
                    stub.stop.wait(reply.delay)
                payload = json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the client gave up (a hanging reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        """The API root (``.../v1``)."""
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def next_reply(self, body: dict[str, Any]) -> Reply:
        """The next scripted reply, else the default's answer to this request."""
        with self._lock:
            self.requests += 1
            if self.script:
                return self.script.pop(0)
        return self.default(body)

    def __enter__(self) -> StubServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()
