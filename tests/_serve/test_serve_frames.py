"""A ``/ws`` frame against a real server: parsed once, and bounded in size.

The toy family (local sandboxes, no Docker) behind uvicorn in this process, driven with
plain WebSocket frames, as in test_serve_doors.py.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
import websockets

import gym.serve
from gym._serve._limits import MAX_FRAME
from gym._serve._models import ToolAction

RESET = {"type": "reset", "data": {"task_id": "add"}}
STATE = {"type": "state"}


def ws_url(url: str) -> str:
    return url.replace("http://", "ws://") + "/ws"


async def ask(ws: Any, message: dict[str, Any] | str) -> dict[str, Any]:
    """Send one frame (a dict as JSON, text as it is) and read the answer."""
    await ws.send(json.dumps(message) if isinstance(message, dict) else message)
    return json.loads(await asyncio.wait_for(ws.recv(), 30))


def padded(size: int) -> str:
    """A state message of exactly ``size`` bytes (JSON allows trailing whitespace)."""
    text = json.dumps(STATE)
    return text + " " * (size - len(text))


class Counting(json.JSONDecoder):
    """json's default decoder, counting the texts it decodes."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def decode(self, s: str, *args: Any, **kwargs: Any) -> Any:
        self.seen.append(s)
        return super().decode(s, *args, **kwargs)


def test_max_calls_is_read_from_the_front_door_without_openenv_names():
    assert "MAX_CALLS" in gym.serve.__all__
    assert gym.serve.MAX_CALLS == 64
    assert ToolAction.model_fields["calls"].metadata[0].max_length == gym.serve.MAX_CALLS


def test_a_frame_is_parsed_once(served, monkeypatch: pytest.MonkeyPatch):
    counting = Counting()
    monkeypatch.setattr(json, "_default_decoder", counting)  # what json.loads(s) uses
    url = served()
    frames = [
        json.dumps(RESET),
        json.dumps({"type": "step", "data": {"tool": "bash", "arguments": {"command": "true"}}}),
        '{"type": "state"',  # invalid JSON: answered by openenv
        json.dumps(STATE),
    ]

    async def go() -> list[dict[str, Any]]:
        async with websockets.connect(ws_url(url)) as ws:
            return [await ask(ws, frame) for frame in frames]

    answers = asyncio.run(go())
    assert answers[0]["type"] == "observation" and answers[1]["type"] == "observation"
    assert answers[2]["data"]["code"] == "INVALID_JSON"
    assert answers[2]["data"]["message"].startswith("Invalid JSON: ")
    assert answers[3]["type"] == "state" and answers[3]["data"]["step_count"] == 1
    assert [counting.seen.count(frame) for frame in frames] == [1, 1, 1, 1]


def test_an_oversize_frame_closes_its_session_only(served):
    url = served(max_sessions=2)

    async def go() -> tuple[dict, Any, dict, dict]:
        async with websockets.connect(ws_url(url)) as first:
            await ask(first, RESET)
            async with websockets.connect(ws_url(url), compression=None) as second:
                full = await ask(second, padded(MAX_FRAME))  # at the limit: read
                with pytest.raises(websockets.ConnectionClosed) as closed:
                    await second.send(padded(MAX_FRAME + 1))  # the server may close first
                    await asyncio.wait_for(second.recv(), 30)
            after = await ask(first, STATE)  # the other session goes on
            third = await reset_when_free(url)  # the closed session's place is free
            return full, closed.value.rcvd, after, third

    full, close, after, third = asyncio.run(go())
    assert full["type"] == "state"
    assert close is not None and close.code == 1009  # message too big
    assert str(MAX_FRAME) in close.reason, close.reason
    assert after["type"] == "state" and after["data"]["task_id"] == "add"
    assert third["type"] == "observation"


async def reset_when_free(url: str) -> dict[str, Any]:
    """A reset on a new connection, once the server has a place for it (10 s at most)."""
    deadline = time.monotonic() + 10
    while True:
        async with websockets.connect(ws_url(url)) as ws:
            answer = await ask(ws, RESET)
        busy = answer.get("data", {}).get("code") == "CAPACITY_REACHED"
        if not busy or time.monotonic() > deadline:
            return answer
        await asyncio.sleep(0.1)
