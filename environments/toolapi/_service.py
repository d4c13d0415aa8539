"""How the host talks to the tool-API service in a sandbox (images/toolapi/toolapi/server.py).

The agent has no shell: each tool call becomes one request, built here on the host as
JSON and sent by bash's ``/dev/tcp`` client inside the container (which has no network;
the service listens on 127.0.0.1 there). The request travels on the command's standard
input, so no argument text is ever read by a shell. The same requests load the backend
at setup, take a checkpoint (state and results) at each turn's end, and replay the gold
calls in the grading container.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

import gym
import gym.sandbox

__all__ = [
    "PORT",
    "SERVICE_USER",
    "Backend",
    "Checkpoint",
    "ServiceDown",
    "exchange",
    "exchange_many",
    "load_request",
    "replay_script",
]

PORT = 8090
SERVICE_USER = "990:990"
_CLIENT = f"exec 3<>/dev/tcp/127.0.0.1/{PORT} 2>/dev/null || exit 3; cat >&3 || exit 4; cat <&3"
"""Send standard input to the service, print its reply; exit 3 when nothing listens."""
_BATCH = (
    "while IFS= read -r line; do "
    f"exec 3<>/dev/tcp/127.0.0.1/{PORT} 2>/dev/null || exit 3; "
    "printf '%s\\n' \"$line\" >&3 || exit 4; cat <&3; exec 3<&-; done"
)
"""Send each line of standard input as one request, printing each reply on its line."""


class ServiceDown(Exception):
    """The service did not answer (it is not listening, or it sent no reply)."""


class Checkpoint(BaseModel):
    """The backend after one user turn: its state and the results of the turn's calls."""

    state: dict[str, Any] = Field(default_factory=dict)
    """Class name -> the instance's public attributes as plain JSON (the service's
    projection: what BFCL's checker compares)."""
    results: list[str] = Field(default_factory=list)
    """The result text of each call of the turn, in order."""


class Backend(BaseModel):
    """What the service is loaded with: the modules, the classes and the initial state."""

    modules: dict[str, str]
    """File name (``NAME.py``) -> Python source."""
    classes: list[str]
    """``module:Class`` of each instance, in order (a method routes to the last class
    that has it)."""
    state: dict[str, Any] = Field(default_factory=dict)
    """Class name -> its initial state (given to the ``setup`` method)."""
    setup: str = "_load_scenario"
    """The method each instance receives its initial state with ('' for none)."""
    setup_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments of that method besides the state."""
    tools: list[str] | None = None
    """The method names that may be called (None: every public method)."""


def load_request(backend: Backend) -> dict[str, Any]:
    """The service request that loads a backend."""
    return {"op": "load", **backend.model_dump()}


def exchange(
    sandbox: gym.sandbox.Sandbox,
    request: Mapping[str, Any],
    *,
    timeout: float,
    max_output: int = 32 << 20,
    shell: bool = False,
) -> dict[str, Any]:
    """Send one request to the service in a sandbox and return its reply.

    Args:
        sandbox: the sandbox.
        request: the request (a JSON object).
        timeout: seconds allowed.
        max_output: bytes of reply read back.
        shell: send it through the sandbox's persistent shell (a few ms, for the small
            requests of tool calls) instead of a fresh process reading standard input.

    Raises:
        ServiceDown: nothing listens, or the reply is missing, cut or not JSON.
    """
    data = json.dumps(request, ensure_ascii=False).encode() + b"\n"
    if shell:
        payload = base64.b64encode(data).decode()
        script = _CLIENT.replace("cat >&3", f"base64 -d <<<'{payload}' >&3")
        result = sandbox.run(f"( {script} )", timeout=timeout, max_output=max_output)
    else:
        argv = ["bash", "-c", _CLIENT]
        result = sandbox.exec(argv, stdin=data, timeout=timeout, max_output=max_output)
    _check(result, timeout)
    try:
        reply = json.loads(result.stdout)
    except json.JSONDecodeError as exc:
        raise ServiceDown(f"the service sent no readable reply ({exc.msg})") from None
    if not isinstance(reply, dict):
        raise ServiceDown("the service's reply is not a JSON object")
    return reply


def exchange_many(
    sandbox: gym.sandbox.Sandbox,
    requests: Sequence[Mapping[str, Any]],
    *,
    timeout: float,
    max_output: int = 64 << 20,
) -> list[dict[str, Any]]:
    """Send requests in order in one command (the grading container's replay); the replies.

    Raises:
        ServiceDown: nothing listens, or a reply is missing, cut or not JSON.
    """
    data = b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in requests)
    result = sandbox.exec(
        ["bash", "-c", _BATCH], stdin=data, timeout=timeout, max_output=max_output
    )
    _check(result, timeout)
    try:
        replies = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise ServiceDown(f"the service sent an unreadable reply ({exc.msg})") from None
    if len(replies) != len(requests) or not all(isinstance(r, dict) for r in replies):
        raise ServiceDown(f"{len(replies)} replies to {len(requests)} requests")
    return replies


def _check(result: gym.sandbox.ExecResult, timeout: float) -> None:
    if result.timed_out:
        raise ServiceDown(f"the service did not answer within {timeout:.0f} s")
    if result.exit_code == 3:
        raise ServiceDown("the tool-API service is not running (nothing listens)")
    if not result.ok or result.stdout_truncated:
        raise ServiceDown(f"the exchange failed (exit {result.exit_code}): {result.stderr[-300:]}")


def replay_script(
    backend: Backend, turns: Sequence[Sequence[gym.ToolCall]]
) -> list[dict[str, Any]]:
    """The requests that load a backend, make each turn's calls and checkpoint each turn."""
    requests = [load_request(backend)]
    for calls in turns:
        requests += [{"op": "call", "name": c.name, "arguments": c.arguments} for c in calls]
        requests.append({"op": "checkpoint"})
    return requests
