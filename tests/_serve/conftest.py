"""Fixtures of the serving tests: a real uvicorn server for the toy family, in this process."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import toy_env

from gym._serve._app import ServeConfig, listening
from gym._serve._environment import BoxgymEnvironment


class Served:
    """A server running in a thread of this process: its URL, and how to stop it."""

    def __init__(self, **config: Any) -> None:
        self.server, sock, self.url = listening(
            ServeConfig(env_id=toy_env.ENV_ID, port=0, **config)
        )
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.server.started, "the server did not start"

    def stop(self) -> None:
        """Stop as SIGTERM stops `gym serve` (uvicorn's exit flag), and wait for it."""
        self.server.should_exit = True
        self.thread.join(timeout=20)


@pytest.fixture
def server() -> Iterator[Callable[..., Served]]:
    """``server(**config)`` starts a server for the toy family; it stops after the test."""
    running: list[Served] = []

    def start(**config: Any) -> Served:
        running.append(Served(**config))
        return running[-1]

    yield start
    for served in running:
        served.stop()


@pytest.fixture
def served(server: Callable[..., Served]) -> Callable[..., str]:
    """``served(**config)`` starts a server for the toy family and returns its URL."""
    return lambda **config: server(**config).url


@pytest.fixture
def closes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The task ids of the sessions whose environment was closed, in order."""
    closed: list[str] = []
    original = BoxgymEnvironment.close

    def close(self: BoxgymEnvironment) -> None:
        original(self)
        closed.append(self._state.task_id or "")

    monkeypatch.setattr(BoxgymEnvironment, "close", close)
    return closed
