"""What the server answers and what it refuses: raw messages against a real server.

The toy family (local sandboxes, no Docker) behind uvicorn in this process, driven with
plain WebSocket frames and HTTP requests, as any client could send them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import websockets
from pydantic import ValidationError

from gym._serve._app import LOST
from gym._serve._models import MAX_CALLS, Call, ToolAction

RESET = {"type": "reset", "data": {"task_id": "add"}}
STATE = {"type": "state"}


def ws_url(url: str) -> str:
    return url.replace("http://", "ws://") + "/ws"


async def ask(ws: Any, message: dict[str, Any] | str | bytes) -> dict[str, Any]:
    """Send one frame (a dict as JSON; text or bytes as they are) and read the answer."""
    await ws.send(json.dumps(message) if isinstance(message, dict) else message)
    return json.loads(await asyncio.wait_for(ws.recv(), 30))


def step(**data: Any) -> dict[str, Any]:
    return {"type": "step", "data": data}


def http(url: str, method: str = "GET", body: dict[str, Any] | None = None) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


# -- F1: a step's calls are bounded --------------------------------------------------


def test_a_step_over_the_call_limit_is_refused_before_any_call_runs(served):
    url = served()

    async def go() -> tuple[str, dict, dict, dict]:
        async with websockets.connect(ws_url(url), max_size=None) as ws:
            await ask(ws, RESET)
            write = {"tool": "write_file", "arguments": {"path": "made.txt", "content": "x"}}
            over = [write] + [{"tool": "bash", "arguments": {"command": "true"}}] * MAX_CALLS
            await ws.send(json.dumps(step(calls=over)))
            raw = await asyncio.wait_for(ws.recv(), 30)
            state = await ask(ws, STATE)
            look = await ask(ws, step(tool="bash", arguments={"command": "ls"}))
            full = await ask(
                ws, step(calls=[{"tool": "bash", "arguments": {"command": "true"}}] * MAX_CALLS)
            )
            return raw, state, look, full

    raw, state, look, full = asyncio.run(go())
    refused = json.loads(raw)
    assert refused["type"] == "error" and refused["data"]["code"] == "VALIDATION_ERROR"
    assert f"at most {MAX_CALLS} calls, not {MAX_CALLS + 1}" in refused["data"]["message"]
    assert len(raw) < 1000  # the answer does not grow with the list
    assert state["data"]["step_count"] == 0  # no call ran...
    assert "made.txt" not in look["data"]["observation"]["text"]  # ...not even the first
    # a list at the limit is served: one output per call, those past the budget unrun
    assert full["type"] == "observation" and full["data"]["done"] is True
    outputs = full["data"]["observation"]["outputs"]
    assert len(outputs) == MAX_CALLS and outputs[-1].startswith("Not run:")


def test_the_action_model_refuses_too_many_calls():
    ToolAction(calls=[Call(tool="bash")] * MAX_CALLS)
    with pytest.raises(ValidationError, match=f"at most {MAX_CALLS} calls"):
        ToolAction(calls=[Call(tool="bash")] * (MAX_CALLS + 1))


# -- F2, F3, F4: the only doors are the documented ones --------------------------------


def test_http_answers_health_schema_and_metadata_only(served):
    url = served()
    for path in ("/health", "/schema", "/metadata"):
        assert http(url + path)[0] == 200, path
    for method, path in [
        ("POST", "/reset"),
        ("POST", "/step"),
        ("GET", "/state"),
        ("POST", "/mcp"),
        ("GET", "/docs"),
    ]:
        body = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {}}
        status, answer = http(url + path, method, body if method == "POST" else None)
        assert status == 404, (path, status, answer)
        assert "is not served" in answer["detail"] and "/ws" in answer["detail"]


def test_http_cannot_reserve_or_close_sessions(served):
    url = served(max_sessions=1)
    create = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {}}
    assert [http(url + "/mcp", "POST", create)[0] for _ in range(3)] == [404] * 3

    async def go() -> tuple[dict, dict, dict]:
        async with websockets.connect(ws_url(url)) as ws:
            first = await ask(ws, RESET)  # the one session still fits
            made = await ask(
                ws, {"type": "mcp", "data": {**create, "method": "openenv/session/create"}}
            )
            closing = {**create, "method": "openenv/session/close", "params": {"session_id": "x"}}
            closed = await ask(ws, {"type": "mcp", "data": closing})
            assert (await ask(ws, STATE))["data"]["task_id"] == "add"  # the session goes on
            return first, made, closed

    first, made, closed = asyncio.run(go())
    assert first["type"] == "observation"
    for refused in (made, closed):
        assert refused["data"]["code"] == "UNKNOWN_TYPE"
        assert "does not serve MCP" in refused["data"]["message"]


# -- F5, F8: a reset is checked whole before its episode starts -------------------------


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"episode_id": {"x": 1}}, "episode_id is a string of up to 255"),
        ({"episode_id": "e" * 256}, "episode_id is a string of up to 255"),
        ({"task_id": ["add"]}, "task_id is a string"),
        ({"seed": True}, "seed is an integer from 0, not True"),
        ({"seed": -1}, "seed is an integer from 0"),
        ({"seed": 1.5}, "seed is an integer from 0"),
        ({"options": {"split": "eval"}}, "options take task; not split"),
        ({"options": "add"}, "options is an object"),
        ({"split": "eval"}, "reset takes seed, episode_id, task_id, options; not split"),
    ],
)
def test_a_refused_reset_starts_no_episode(served, data, says):
    url = served()

    async def go() -> tuple[dict, dict, dict]:
        async with websockets.connect(ws_url(url)) as ws:
            refused = await ask(ws, {"type": "reset", "data": {"task_id": "add", **data}})
            state = await ask(ws, STATE)
            submitted = await ask(ws, step(tool="submit"))
            return refused, state, submitted

    refused, state, submitted = asyncio.run(go())
    assert refused["type"] == "error" and says in refused["data"]["message"]
    assert state["data"]["done"] is True and state["data"]["task_id"] is None
    assert state["data"]["sandbox"] is None
    assert "reset first" in submitted["data"]["message"]  # nothing to submit, no reward


def test_a_reset_takes_an_episode_id_up_to_the_limit(served):
    url = served()

    async def go() -> dict:
        async with websockets.connect(ws_url(url)) as ws:
            reset = {"task_id": "add", "episode_id": "e" * 255, "seed": 0, "options": {}}
            assert (await ask(ws, {"type": "reset", "data": reset}))["type"] == "observation"
            return await ask(ws, STATE)

    assert asyncio.run(go())["data"]["episode_id"] == "e" * 255


def test_a_connection_over_the_limit_is_told_what_to_do(served):
    url = served(max_sessions=1)

    async def go() -> dict:
        async with websockets.connect(ws_url(url)) as first:
            await ask(first, RESET)
            async with websockets.connect(ws_url(url)) as second:
                return json.loads(await asyncio.wait_for(second.recv(), 30))

    refused = asyncio.run(go())
    assert refused["data"]["code"] == "CAPACITY_REACHED"
    message = refused["data"]["message"]
    assert "1/1 sessions" in message and "--max-sessions" in message
    assert "--session-timeout" in message


# -- F6: a malformed message is answered, and the session goes on ---------------------

DEEP = (
    '{"type": "step", "data": {"tool": "bash", "arguments": ' + '{"a": ' * 5000 + "1" + "}" * 5002
)


@pytest.mark.parametrize(
    ("frame", "code", "says"),
    [
        ("null", "VALIDATION_ERROR", "not null"),
        ("[1, 2, 3]", "VALIDATION_ERROR", "not an array"),
        ('"reset"', "VALIDATION_ERROR", "not a string"),
        (b'{"type": "state"}', "INVALID_JSON", "binary frames are not read"),
        (DEEP, "INVALID_JSON", "nested too deep"),
        ("{not json", "INVALID_JSON", "Invalid JSON"),  # openenv's own answer
    ],
    ids=["null", "array", "string", "binary", "deep", "invalid"],
)
def test_a_malformed_message_is_answered_and_the_session_goes_on(served, frame, code, says):
    url = served()

    async def go() -> tuple[dict, dict, dict]:
        async with websockets.connect(ws_url(url), max_size=None) as ws:
            await ask(ws, RESET)
            refused = await ask(ws, frame)
            state = await ask(ws, STATE)
            end = await ask(ws, step(tool="submit"))
            return refused, state, end

    refused, state, end = asyncio.run(go())
    assert refused["type"] == "error" and refused["data"]["code"] == code
    assert says in refused["data"]["message"]
    if code != "INVALID_JSON" or "binary" in says:
        assert '{"type": "reset"' in refused["data"]["message"]  # says what a message is
    assert state["data"]["task_id"] == "add" and state["data"]["done"] is False
    assert end["data"]["done"] is True


# -- F7: a client that leaves is one log line, not a traceback ------------------------


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def logged() -> Iterator[Callable[[], list[logging.LogRecord]]]:
    """``logged()``: what uvicorn (its errors: tracebacks) and gym serve log from now on.

    Called once the server is up: uvicorn's logging setup drops the handlers it finds.
    """
    handler = Records()
    loggers = [logging.getLogger("uvicorn.error"), logging.getLogger("gym.serve")]

    def watch() -> list[logging.LogRecord]:
        for logger in loggers:
            logger.addHandler(handler)
        return handler.records

    yield watch
    for logger in loggers:
        logger.removeHandler(handler)


def wait_for(condition: Any, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)


def lines(records: list[logging.LogRecord]) -> list[tuple[str, str, bool]]:
    return [(r.name, r.getMessage(), r.exc_info is not None) for r in records]


def test_a_client_leaving_mid_step_is_one_line(served, closes, logged):
    url = served()
    records = logged()

    async def leave() -> None:
        async with websockets.connect(ws_url(url)) as ws:
            await ask(ws, RESET)
            await ws.send(json.dumps(step(tool="bash", arguments={"command": "sleep 1.5"})))
            await asyncio.sleep(0.3)  # the step runs; the client goes

    asyncio.run(leave())
    wait_for(lambda: closes == ["add"])
    time.sleep(0.5)  # whatever the server logs after the close
    assert closes == ["add"]
    assert lines(records) == [("gym.serve", LOST, False)]


def test_a_client_leaving_between_messages_logs_nothing(served, closes, logged):
    url = served()
    records = logged()

    async def leave() -> None:
        async with websockets.connect(ws_url(url)) as ws:
            await ask(ws, RESET)
        async with websockets.connect(ws_url(url)) as ws:
            await ask(ws, RESET)
            await ws.send(json.dumps({"type": "close"}))

    asyncio.run(leave())
    wait_for(lambda: len(closes) == 2)
    time.sleep(0.5)
    assert closes == ["add", "add"] and lines(records) == []


def test_stopping_the_server_mid_step_logs_no_traceback(server, closes, logged):
    served = server()
    records = logged()

    async def stopped() -> None:
        async with websockets.connect(ws_url(served.url)) as ws:
            await ask(ws, RESET)
            await ws.send(json.dumps(step(tool="bash", arguments={"command": "sleep 1.5"})))
            await asyncio.sleep(0.3)
            await asyncio.to_thread(served.stop)  # as SIGTERM does
            with pytest.raises(websockets.ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 30)

    asyncio.run(stopped())
    assert not served.thread.is_alive() and closes == ["add"]
    assert [line for line in lines(records) if line[2]] == []  # no traceback
