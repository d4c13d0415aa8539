"""The OpenEnv server of a boxgym environment: openenv-core's FastAPI app, run by uvicorn.

openenv-core's `HTTPEnvServer` speaks the protocol: ``/ws`` holds one session per
WebSocket connection (reset, step, state, close), each with its own `BoxgymEnvironment`
and worker thread, up to ``max_sessions`` at once; its reaper closes a session idle for
more than ``session_timeout`` seconds. ``/health``, ``/schema`` and ``/metadata`` answer
over HTTP; OpenEnv's HTTP ``/reset`` and ``/step`` are one-shot (a fresh environment per
request, closed after it), so an episode runs over ``/ws``, as OpenEnv's clients do.
"""

from __future__ import annotations

import asyncio
import functools
import socket
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from gym._core._errors import ConfigError
from gym._core._version import __version__
from gym._envs._registry import spec_of
from gym._run._runner import check_split

__all__ = ["ServeConfig", "create_app", "listening", "serve"]


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
    protocol = _busy_never_idle(http_server.HTTPEnvServer)(
        functools.partial(BoxgymEnvironment, config.env_id, make_kwargs),
        ToolAction,
        ToolObservation,
        concurrency_config=types.ConcurrencyConfig(
            max_concurrent_envs=config.max_sessions, session_timeout=config.session_timeout
        ),
    )
    app = FastAPI(title=f"{config.env_id} over OpenEnv (gym serve)", version=__version__)
    protocol.register_routes(app)
    app.router.on_shutdown.append(functools.partial(_stop_workers, protocol))
    return app


def _busy_never_idle(base: type[Any]) -> type[Any]:
    """The OpenEnv server class, where a session whose call is running is never idle.

    openenv-core 0.3.0's reaper counts a session's idle time from its last message, so a
    step longer than the timeout (a slow test suite) lost its session in the middle of
    it. Here the session's activity is refreshed while its call runs, a few times per
    timeout, and once more when the call ends.
    """

    class BusyNeverIdle(base):  # type: ignore[misc]
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

    return BusyNeverIdle


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


class _QuietClose:
    """The app, with a session's close after its client left kept out of the error log.

    openenv-core 0.3.0 closes the WebSocket at the end of every session, after its
    environment is closed, and lets `WebSocketDisconnect` escape when the
    client has already gone (as openenv's own client does): uvicorn would log a
    traceback per episode for nothing.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        from fastapi import WebSocketDisconnect

        try:
            await self.app(scope, receive, send)
        except WebSocketDisconnect:
            if scope["type"] != "websocket":
                raise


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

    app = _QuietClose(create_app(config))
    sock = _bind(config.host, config.port)
    host, port = sock.getsockname()[:2]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
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
