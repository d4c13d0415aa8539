"""A local HTTP server that plays an LLM judge with scripted answers (for judge tests)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from gym.grading import Judge

# A reply is (status, content) or (status, content, headers); content str = the message.
Reply = tuple[int, str] | tuple[int, str, dict[str, str]]

_NONCE = re.compile(r'"nonce": "([0-9a-f]+)"')
_VERDICT = re.compile(r'\{"(score|winner)"')


def nonce_of(body: dict[str, Any]) -> str:
    """The nonce the judge's prompt asks the verdict to carry ('' when none)."""
    found = _NONCE.search(user_text(body))
    return found.group(1) if found else ""


def sign(body: dict[str, Any], content: str) -> str:
    """``content`` with the call's nonce put first in every ``{"score"``/``{"winner"``
    object, as a judge following its prompt writes its verdict."""
    nonce = nonce_of(body)
    return _VERDICT.sub(lambda m: '{"nonce": "' + nonce + '", "' + m.group(1) + '"', content)


class StubJudge:
    """A chat-completions server whose answers come from a function of the request."""

    def __init__(self, answer: Callable[[dict[str, Any]], Reply], *, signed: bool = True) -> None:
        self.answer = answer
        self.signed = signed
        """Whether verdict objects of the answers get the call's nonce (`sign`)."""
        self.finish_reason = "stop"
        """The ``finish_reason`` of every answer."""
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append(body)
                stub.headers.append(dict(self.headers))
                reply = stub.answer(body)
                status, content = reply[0], reply[1]
                extra = reply[2] if len(reply) == 3 else {}
                if status == 200:
                    if stub.signed:
                        content = sign(body, content)
                    message = {"role": "assistant", "content": content}
                    choice = {"message": message, "finish_reason": stub.finish_reason}
                    payload = {"choices": [choice]}
                    data = json.dumps(payload).encode()
                else:
                    data = json.dumps({"error": {"message": content}}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in extra.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def user_text(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def make_judge(server: StubJudge, tmp_path: Path, **kw: Any) -> Judge:
    """A judge asking ``server``, retrying at once, with a cache of its own under tmp_path."""
    settings: dict[str, Any] = {"backoff": 0.01, "cache_path": tmp_path / "cache.db"}
    return Judge(base_url=server.url, model="stub-judge", **(settings | kw))
