"""A stand-in OpenAI-compatible model server: a fixed script of tool calls, a set latency.

    python bench/_standin.py [--latency 0.5 | exp:0.5 | uniform:0.2-0.8] [--calls 4]

One asyncio process (uvicorn, a bare ASGI app): a request waits its latency without
holding a thread, so hundreds of open requests cost it almost nothing and the stand-in is
never what a benchmark measures (`StandIn.cpu_s` tells its CPU). Each conversation gets
the script its tools ask for:

- tools with ``bash`` (boxgym's code tasks): ``--calls`` bash calls, then ``submit``;
- tools with ``run_command`` (agentbox-rl's shell mode): ``--calls`` run_command calls,
  then a plain answer (agentbox-rl ends an episode on a message without a call);
- anything else: a plain answer.

The step is the number of assistant messages in the request. Call ids carry the
conversation (``call_<conversation>_<step>``), so the server knows which answer a request
follows and measures the gap from sending an answer to receiving the request that carries
its tool's result: the client's side of a step (reading the answer, running the tool,
sending the next request). ``GET /stats`` returns the counts and the gaps, ``POST
/reset`` clears them. On start the process prints ``PORT <n>`` on standard output.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

COMMAND = "echo step {i} && ls -la /workspace | wc -l"
"""The shell command of call ``i`` (the same on both sides)."""

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class Latency:
    """Seconds each answer waits: ``0.5`` (fixed), ``exp:0.5`` (exponential, mean 0.5) or
    ``uniform:0.2-0.8``; sampled from a seeded generator."""

    def __init__(self, spec: str, seed: int = 0) -> None:
        self.spec = spec
        self.rng = random.Random(seed)
        kind, _, value = spec.rpartition(":")
        if kind == "exp":
            mean = float(value)
            self.draw = lambda: self.rng.expovariate(1 / mean) if mean > 0 else 0.0
        elif kind == "uniform":
            lo, hi = (float(x) for x in value.split("-"))
            self.draw = lambda: self.rng.uniform(lo, hi)
        elif kind == "":
            fixed = float(value)
            self.draw = lambda: fixed
        else:
            raise SystemExit(f"latency {spec!r}: use 0.5, exp:0.5 or uniform:0.2-0.8")

    def __call__(self) -> float:
        return max(0.0, self.draw())


class Script:
    """The answer to a request: its step's call from the script its tools choose."""

    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.ids = itertools.count(1)

    def answer(self, body: dict[str, Any]) -> tuple[dict[str, Any], str, int]:
        """(the assistant message, its conversation, its step) for a request body."""
        messages = body.get("messages") or []
        step = sum(m.get("role") == "assistant" for m in messages)
        conversation = _conversation(messages) or f"c{next(self.ids)}"
        names = {(t.get("function") or {}).get("name") for t in body.get("tools") or []}
        tool = "bash" if "bash" in names else "run_command" if "run_command" in names else ""
        if not tool:
            return _text("done"), conversation, step
        if step < self.calls:
            arguments = {"command": COMMAND.format(i=step)}
            return _call(tool, arguments, f"call_{conversation}_{step}"), conversation, step
        if tool == "bash" and "submit" in names:
            return _call("submit", {}, f"call_{conversation}_{step}"), conversation, step
        return _text("done"), conversation, step


def _conversation(messages: list[dict[str, Any]]) -> str | None:
    """The conversation a request continues, from the id of its last call."""
    for message in reversed(messages):
        for call in message.get("tool_calls") or []:
            parts = str(call.get("id", "")).split("_")
            if len(parts) == 3 and parts[0] == "call":
                return parts[1]
    return None


def _call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    call = {"id": call_id, "type": "function", "function": function}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def _text(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def completion(message: dict[str, Any], model: str) -> dict[str, Any]:
    """A chat completion as vLLM's server shapes one (non-streaming)."""
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": f"chatcmpl-{os.urandom(8).hex()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


class App:
    """The ASGI app: chat completions from `Script` after `Latency`, stats, reset."""

    def __init__(self, latency: Latency, script: Script) -> None:
        self.latency = latency
        self.script = script
        self.reset()

    def reset(self) -> None:
        self.requests = 0
        self.open = 0
        self.most_open = 0
        self.sent: dict[tuple[str, int], float] = {}  # (conversation, step) -> answer sent
        self.gaps: list[float] = []

    def stats(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "most_open": self.most_open,
            "gaps": self.gaps,
            "latency": self.latency.spec,
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        path, method = scope["path"], scope["method"]
        if method == "POST" and path.endswith("/chat/completions"):
            await self.complete(json.loads(body), send)
        elif path == "/stats":
            await _reply(send, self.stats())
        elif method == "POST" and path == "/reset":
            self.reset()
            await _reply(send, {"ok": True})
        elif path.endswith("/models"):
            await _reply(send, {"object": "list", "data": [{"id": "standin", "object": "model"}]})
        else:
            await _reply(send, {"error": {"message": f"no route {method} {path}"}}, 404)

    async def complete(self, body: dict[str, Any], send: Send) -> None:
        arrived = time.monotonic()
        self.requests += 1
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        message, conversation, step = self.script.answer(body)
        answered = self.sent.pop((conversation, step - 1), None)
        if answered is not None:
            self.gaps.append(arrived - answered)
        try:
            await asyncio.sleep(self.latency())
            await _reply(send, completion(message, str(body.get("model", "standin"))))
            if message.get("tool_calls"):
                self.sent[(conversation, step)] = time.monotonic()
        finally:
            self.open -= 1


async def _reply(send: Send, data: Any, status: int = 200) -> None:
    payload = json.dumps(data).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(payload))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def serve(latency: str, calls: int, port: int = 0, seed: int = 0) -> None:
    """Serve on 127.0.0.1:``port`` (0: any free port) until killed; print ``PORT <n>``."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # asyncio sets it only where the socket's proto is IPPROTO_TCP (0 here); accepted
    # sockets inherit it. Without it each answer after a connection's first waited 40 ms
    # for a delayed ACK (the headers and the body are two writes).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(4096)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    app = App(Latency(latency, seed), Script(calls))
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="off", backlog=4096,
        timeout_keep_alive=600,
    )  # fmt: skip
    uvicorn.Server(config).run(sockets=[sock])


class StandIn:
    """A stand-in server in a process of its own, for a benchmark or a test.

    ``with StandIn("0.5") as server:`` then ``server.url`` (ending in ``/v1``),
    ``server.stats()``, ``server.reset()`` and ``server.cpu_s()`` (its CPU-seconds so far).
    """

    def __init__(self, latency: str = "0", calls: int = 4, seed: int = 0) -> None:
        self.args = ["--latency", latency, "--calls", str(calls), "--seed", str(seed)]
        self.proc: subprocess.Popen[str] | None = None
        self.base = ""

    def __enter__(self) -> StandIn:
        cmd = [sys.executable, str(Path(__file__).resolve()), *self.args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            self.__exit__()
            raise RuntimeError(f"the stand-in server did not start (it printed {line!r})")
        self.base = f"http://127.0.0.1:{int(line.split()[1])}"
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
            if self.proc.stdout is not None:
                self.proc.stdout.close()

    @property
    def url(self) -> str:
        """The API root for ``--base-url``."""
        return f"{self.base}/v1"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def stats(self) -> dict[str, Any]:
        """Requests served, the most open at once, the answer-to-result gaps (s)."""
        with urllib.request.urlopen(f"{self.base}/stats", timeout=30) as response:
            return dict(json.loads(response.read()))

    def reset(self) -> None:
        request = urllib.request.Request(f"{self.base}/reset", data=b"", method="POST")
        urllib.request.urlopen(request, timeout=30).close()

    def cpu_s(self) -> float:
        """CPU-seconds the server's process has used (from /proc)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency", default="0", help="0.5, exp:0.5 or uniform:0.2-0.8 (s)")
    parser.add_argument("--calls", type=int, default=4, help="tool calls before the end")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    opts = parser.parse_args()
    serve(opts.latency, opts.calls, opts.port, opts.seed)


if __name__ == "__main__":
    main()
