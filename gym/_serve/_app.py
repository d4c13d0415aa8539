"""The OpenEnv server of a boxgym environment: openenv-core's FastAPI app, run by uvicorn.

openenv-core's `HTTPEnvServer` speaks the protocol: ``/ws`` holds one session per
WebSocket connection (reset, step, state, close), each with its own `BoxgymEnvironment`
and worker thread, up to ``max_sessions`` at once; its reaper closes a session idle for
more than ``session_timeout`` seconds. ``/health``, ``/schema`` and ``/metadata`` answer
over HTTP, and nothing else does: OpenEnv's one-shot HTTP ``/reset``, ``/step`` and
``/state`` (a fresh environment per request: no episode can run over them) and its MCP
routes (``/mcp``, whose session methods reserve or close any session without a
connection) are not served, so an episode runs over ``/ws``, as OpenEnv's clients do.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import socket
import threading
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from gym._core._errors import ConfigError
from gym._core._version import __version__
from gym._envs._registry import spec_of
from gym._run._runner import check_split
from gym._serve._limits import MAX_CALLS, MAX_FRAME

__all__ = ["ServeConfig", "create_app", "listening", "serve"]

log = logging.getLogger("gym.serve")

LOST = (
    "a session's connection closed before its answer was sent (the client left, or the "
    "server is stopping): the session is closed"
)
"""The one line logged for an answer lost to a connection gone (no traceback)."""
ELSEWHERE = (
    "gym serve runs episodes over the WebSocket /ws (one session per connection: "
    "reset, step, state, close, as OpenEnv's EnvClient sends them); over HTTP it "
    "answers /health, /schema and /metadata only"
)
"""Where episodes run, in the 404 of any other path."""


class ServeConfig(BaseModel):
    """How `gym serve` serves an environment."""

    env_id: str
    """The registered environment id (``boxgym/PyFunc-v0``)."""
    host: str = "127.0.0.1"
    """The address to listen on."""
    port: int = Field(default=8000, ge=0, le=65535)
    """The port to listen on (0: a free one)."""
    max_sessions: int = Field(default=8, ge=1)
    """Sessions (WebSocket connections, each one running episode at a time) at once; a
    client over the limit is refused with OpenEnv's ``CAPACITY_REACHED``."""
    session_timeout: float | None = Field(default=600.0, gt=0)
    """Seconds a session may stay idle (no call running, no message) before the server
    closes it and its environment (None: never)."""
    split: str | None = None
    """Only tasks of this split (all by default): a reset without a task picks among them."""


def create_app(config: ServeConfig) -> Any:
    """The FastAPI app serving ``config.env_id`` over the OpenEnv protocol.

    Raises:
        EnvNotFound: the id is not registered.
        ConfigError: the environment declares no such split (as `gym run` refuses it), or
            openenv-core is not installed.
    """
    spec_of(config.env_id)  # an unknown id fails now, with suggestions
    check_split([config.env_id], config.split)  # a typo would serve no task at all
    http_server, types = _openenv()
    from fastapi import FastAPI

    from gym._serve._environment import BoxgymEnvironment
    from gym._serve._models import ToolAction, ToolObservation

    make_kwargs = {"split": config.split} if config.split else {}
    protocol = _boxgym_server(http_server.HTTPEnvServer)(
        functools.partial(BoxgymEnvironment, config.env_id, make_kwargs),
        ToolAction,
        ToolObservation,
        concurrency_config=types.ConcurrencyConfig(
            max_concurrent_envs=config.max_sessions, session_timeout=config.session_timeout
        ),
    )
    app = FastAPI(
        title=f"{config.env_id} over OpenEnv (gym serve)",
        version=__version__,
        openapi_url=None,  # /schema describes the messages; nothing else is served
        docs_url=None,
        redoc_url=None,
    )
    http_server.json = _ONCE  # a frame is parsed once (_Once)
    protocol.register_routes(app, mode="production")  # no one-shot /reset, /step, /state
    app.router.routes[:] = [r for r in app.router.routes if getattr(r, "path", "") != "/mcp"]
    app.add_exception_handler(404, _not_served)
    app.add_middleware(_Guard)
    app.router.on_shutdown.append(functools.partial(_stop_workers, protocol))
    return app


async def _not_served(request: Any, exc: Exception) -> Any:
    """The 404 of a path that is not served, saying where episodes run."""
    from fastapi.responses import JSONResponse

    return JSONResponse({"detail": f"{request.url.path} is not served: {ELSEWHERE}"}, 404)


def _boxgym_server(base: type[Any]) -> type[Any]:
    """The OpenEnv server class, where a session whose call is running is never idle.

    openenv-core 0.3.0's reaper counts a session's idle time from its last message, so a
    step longer than the timeout (a slow test suite) lost its session in the middle of
    it. Here the session's activity is refreshed while its call runs, a few times per
    timeout, and once more when the call ends. A connection over the limit is told
    what to do about it.
    """
    from openenv.core.env_server.exceptions import SessionCapacityError

    class BoxgymServer(base):  # type: ignore[misc]
        async def _create_session(self) -> Any:
            try:
                return await super()._create_session()
            except SessionCapacityError as exc:
                active, most = exc.active_sessions, exc.max_sessions
                raise SessionCapacityError(
                    active,
                    most,
                    f"Server at capacity: {active}/{most} sessions active. Connect again "
                    "once a session ends (an idle one is closed after --session-timeout), "
                    "or restart the server with a higher --max-sessions",
                ) from None

        async def _run_in_session_executor(
            self, session_id: str, func: Callable[..., Any], *args: Any, **kwargs: Any
        ) -> Any:
            timeout = self._session_idle_timeout_s
            beat = None if timeout is None else asyncio.create_task(self._beat(session_id, timeout))
            try:
                return await super()._run_in_session_executor(session_id, func, *args, **kwargs)
            finally:
                if beat is not None:
                    beat.cancel()
                self._update_session_activity(session_id)

        async def _beat(self, session_id: str, timeout: float) -> None:
            while True:
                self._update_session_activity(session_id)
                await asyncio.sleep(timeout / 4)

    return BoxgymServer


async def _stop_workers(protocol: Any) -> None:
    """Let the worker threads of openenv's shared pool go once the server stops.

    openenv-core 0.3.0 never shuts that pool down (its one-shot HTTP endpoints run there,
    and a session's calls once the idle reaper closed it): a process that joins its
    threads before the interpreter's exit hooks run (`gym` commands do) would wait on
    them forever.
    """
    pool = getattr(protocol, "_executor", None)
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)


class _Guard:
    """The app's ASGI middleware: ``/ws`` sessions read only what they serve, quietly.

    A session reads only the messages it serves, and a client that left costs one log
    line, not a traceback.

    openenv-core 0.3.0's ``/ws`` loop answers only invalid JSON and keeps the session:
    any other malformed message (a binary frame, JSON that is not an object, JSON
    nested deeper than Python's reader goes) ended the session with a bare
    ``SESSION_ERROR``, and its ``mcp`` messages reached OpenEnv's session methods (one
    closes any session by id). Here such a message is answered with an error that says
    what a message is, and the session goes on; so is a step whose ``calls`` list is
    over `MAX_CALLS`, before anything reads its calls. A text frame is parsed once, here:
    openenv's loop is handed that value (`_Once`).

    A client that leaves in the middle of a call: openenv's loop tries to send the
    answer, then an error, then closes, each failing (a four-exception traceback per
    session). Here a send to a client that left is dropped, with one warning for the
    answer lost, and the loop ends as it does when the client leaves between messages.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        from fastapi import WebSocketDisconnect

        link = _Link(receive, send)
        try:
            await self.app(scope, link.receive, link.send)
        except WebSocketDisconnect:
            pass  # the client left: nothing to answer, nobody to tell


class _Link:
    """One WebSocket connection's ASGI ``receive`` and ``send``, guarded (see `_Guard`)."""

    def __init__(self, receive: Any, send: Any) -> None:
        self._receive, self._send = receive, send
        self.gone = False

    async def receive(self) -> Any:
        """The next message the session reads; a malformed one is answered here."""
        while True:
            message = await self._receive()
            if message["type"] == "websocket.disconnect":
                self.gone = True
            if message["type"] != "websocket.receive":
                return message
            refusal, parsed = _read(message)
            if refusal is None:
                _ONCE.keep(message["text"], parsed)
                return message
            await self.send({"type": "websocket.send", "text": refusal})

    async def send(self, message: Any) -> None:
        """Send, unless the client left (its answer is dropped, with one warning)."""
        if self.gone:
            return
        try:
            await self._send(message)
        except OSError:  # uvicorn's ClientDisconnected: the connection is gone
            self.gone = True
            if message["type"] == "websocket.send":
                log.warning(LOST)


SHAPE = 'a message is a JSON object, {"type": "reset" | "step" | "state" | "close", "data": {...}}'
"""What a ``/ws`` message is, in the errors refusing one that is not."""


def _read(message: dict[str, Any]) -> tuple[str | None, Any]:
    """A ``/ws`` text frame parsed, or the error answering a frame the session must not read.

    Returns (None, the parsed value) for a frame the session reads, and (the error, None)
    otherwise. Invalid JSON is read (its value: the JSONDecodeError): openenv answers it
    (``INVALID_JSON``) and goes on.
    """
    from openenv.core.env_server.types import WSErrorCode

    text = message.get("text")
    if text is None:
        why = f"binary frames are not read: {SHAPE}, as text"
        return _error(WSErrorCode.INVALID_JSON, why), None
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, exc
    except RecursionError:
        why = f"the JSON is nested too deep to read: {SHAPE}"
        return _error(WSErrorCode.INVALID_JSON, why), None
    refusal = _refusal(parsed)
    return refusal, None if refusal else parsed


def _refusal(parsed: Any) -> str | None:
    """The error answering a parsed frame the session must not read (None: read it)."""
    from openenv.core.env_server.types import WSErrorCode

    if not isinstance(parsed, dict):
        return _error(WSErrorCode.VALIDATION_ERROR, f"{SHAPE}, not {_json_kind(parsed)}")
    if parsed.get("type") == "mcp":
        return _error(WSErrorCode.UNKNOWN_TYPE, f"gym serve does not serve MCP: {SHAPE}")
    data = parsed.get("data")
    calls = data.get("calls") if isinstance(data, dict) else None
    if parsed.get("type") == "step" and isinstance(calls, list) and len(calls) > MAX_CALLS:
        return _error(
            WSErrorCode.VALIDATION_ERROR,
            f"a step makes at most {MAX_CALLS} calls, not {len(calls)}: "
            "send them over several steps (none of these was run)",
        )
    return None


class _Once(threading.local):
    """``json`` for openenv's ``/ws`` loop: the frame `_Link` parsed is not parsed again.

    openenv-core 0.3.0's loop reads a frame's text and calls ``json.loads`` on it, with no
    await between: `_Link.receive` keeps the value it parsed with that very text (the
    same object), and ``loads`` hands it back (or raises its JSONDecodeError) once. Any
    other call, or another version's loop, gets json's own (one value kept per thread:
    each server's event loop runs in one).
    """

    JSONDecodeError = json.JSONDecodeError

    def __init__(self) -> None:
        self._kept: tuple[str, Any] | None = None

    def keep(self, text: str, value: Any) -> None:
        """The value of the frame ``text`` the loop parses next."""
        self._kept = (text, value)

    def loads(self, text: Any, **kwargs: Any) -> Any:
        """The kept value when ``text`` is the kept frame, else ``json.loads``."""
        kept, self._kept = self._kept, None
        if kept is None or kept[0] is not text or kwargs:
            return json.loads(text, **kwargs)
        if isinstance(kept[1], json.JSONDecodeError):
            raise kept[1]
        return kept[1]

    def __getattr__(self, name: str) -> Any:
        return getattr(json, name)


_ONCE = _Once()
"""What openenv's server module reads as ``json`` once an app is made (`create_app`)."""


def _error(code: str, message: str) -> str:
    """An OpenEnv error message, as openenv's own loop sends it."""
    from openenv.core.env_server.types import WSErrorResponse

    return WSErrorResponse(data={"message": message, "code": code}).model_dump_json()


def _json_kind(value: Any) -> str:
    """What a JSON value is, in words (``null``, ``an array``...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    kinds = {list: "an array", str: "a string", int: "a number", float: "a number"}
    return kinds.get(type(value), type(value).__name__)


def serve(config: ServeConfig, *, ready: Callable[[str], None] | None = None) -> None:
    """Serve until interrupted; ``ready`` gets the server's URL once it listens.

    Raises:
        ConfigError: the address cannot be bound, or openenv-core is not installed.
    """
    server, sock, url = listening(config)
    if ready is not None:
        ready(url)
    server.run(sockets=[sock])


def listening(config: ServeConfig) -> tuple[Any, socket.socket, str]:
    """A uvicorn server for the app, its bound socket and its URL (``server.run(sockets=)``).

    Raises:
        ConfigError: the address cannot be bound, or openenv-core is not installed.
    """
    import uvicorn

    app = create_app(config)
    sock = _bind(config.host, config.port)
    host, port = sock.getsockname()[:2]
    settings = uvicorn.Config(app, log_level="warning", lifespan="on", ws_max_size=MAX_FRAME)
    server = uvicorn.Server(settings)
    return server, sock, f"http://{_url_host(host)}:{port}"


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, so that asyncio sets TCP_NODELAY on it (it looks at the field):
    # without, every answer after a connection's first waits 40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"cannot listen on {host}:{port}: {exc.strerror}; pick another --port (0: a free one)"
        ) from exc
    sock.listen(128)
    return sock


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _openenv() -> tuple[Any, Any]:
    """openenv-core's server modules, or how to install them."""
    try:
        from openenv.core.env_server import http_server, types
    except ImportError as exc:
        raise ConfigError(
            f"gym serve needs openenv-core ({exc}): pip install 'boxgym[openenv]'"
        ) from exc
    return http_server, types
