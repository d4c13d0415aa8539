"""Real HTTP servers on localhost for the checks of a model server before a run.

`ModelsServer` answers ``GET /v1/models`` as vLLM does (``{"object": "list", "data":
[{"id": ..., "object": "model"}]}``), or with a status of its choosing, and every chat
completion with a call of ``submit`` (an episode of one step). `silent` accepts
connections and never answers; `free_port` is a port where nothing listens.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

SUBMIT = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "served",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call-1",
                        "type": "function",
                        "function": {"name": "submit", "arguments": "{}"},
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
}


class JsonHandler(BaseHTTPRequestHandler):
    """A request handler that answers JSON (`_send`) and logs nothing."""

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class LocalServer:
    """An HTTP server on localhost (``server``), served from a thread while `serving`."""

    server: ThreadingHTTPServer

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @contextmanager
    def serving(self) -> Iterator[Self]:
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.server.shutdown()
            self.server.server_close()
            thread.join(5)


class ModelsServer(LocalServer):
    """Serves ``models`` at ``GET /v1/models`` (``status`` other than 200: an error body)."""

    def __init__(self, models: list[str], status: int = 200) -> None:
        self.models, self.status = models, status
        self.gets: list[str] = []
        self.posts = 0
        owner = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:
                owner.gets.append(self.path)
                if owner.status != 200 or self.path.rstrip("/") != "/v1/models":
                    self._send(owner.status if owner.status != 200 else 404, {"error": "no"})
                    return
                data = [{"id": m, "object": "model", "owned_by": "vllm"} for m in owner.models]
                self._send(200, {"object": "list", "data": data})

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                owner.posts += 1
                self._send(200, SUBMIT)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True


def free_port() -> int:
    """A localhost port where nothing listens (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def silent() -> Iterator[str]:
    """The base URL of a socket that accepts connections and never answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield f"http://127.0.0.1:{s.getsockname()[1]}/v1"
