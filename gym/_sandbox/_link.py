"""Containers tied to the process that started them: they go when it goes.

Every container boxgym starts is linked to this process twice over:

1. Its standard input is attached (``stdin_open``, closed when the attaching client
   goes) and held by this process. The main process of an agent container is a shell
   waiting on ``cat`` (`LINK_COMMAND`), which ends at end of input; a waiting grading
   container's main process ends the same way. The container then stops and the engine
   removes it (``auto_remove``), also when this process is killed with ``kill -9``: the
   kernel closes its sockets.
2. A watchdog process, started with the first container, waits on a pipe from this
   process; when the pipe closes (this process exited or was killed) it removes every
   container carrying this process's owner label. That covers the moments the first link
   cannot: a container created but not yet started, and a grading container that has
   already read its input.

Containers are also removed by the engine when it restarts (``auto_remove`` containers
that stopped are removed at its start).
"""

from __future__ import annotations

import contextlib
import os
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any

import docker.errors
import requests.exceptions
from docker.models.containers import _create_container_args
from docker.types import LogConfig

from gym._core._errors import GymError, ImageError, SandboxError, SandboxUnavailable
from gym._sandbox import _netless, _seccomp
from gym._sandbox._engine import client, docker_errors, owner_label, remove_container
from gym._sandbox._gate import EngineGate
from gym._sandbox._stream import ExecSocket

__all__ = [
    "LINK_COMMAND",
    "later",
    "refuse_new",
    "remove_later",
    "remove_quietly",
    "shutdown_removals",
    "start_linked",
    "start_watchdog",
]

LINK_COMMAND = ["sh", "-c", "cat; exit 0"]
"""The main process of a container that lives as long as its link: ends at end of input.

The shell is the container's init: while it waits for ``cat`` it reaps every child it
has, so orphans of the agent's processes (reparented to it) leave no zombies to fill the
pids limit. The engine's init would do the same, but it is one host file shared by every
container that has it: an inode two agents running at once could ``flock`` to signal."""

_WATCHDOG = """
import sys
sys.stdin.buffer.read()
import docker
engine = docker.from_env(timeout=60)
rows = engine.api.containers(all=True, filters={"label": "boxgym.owner=" + sys.argv[1]})
for row in rows:
    try:
        engine.api.remove_container(row["Id"], force=True)
    except Exception:
        pass
"""
_watchdog_lock = threading.Lock()
_watchdog_pid = 0  # the pid of the process whose watchdog runs (a fork needs its own)


def start_watchdog() -> None:
    """Start this process's watchdog (once): it removes our containers when we are gone."""
    global _watchdog_pid
    with _watchdog_lock:
        if _watchdog_pid == os.getpid():
            return
        read, write = os.pipe()  # both ends close-on-exec: no other child holds them
        actions = [(os.POSIX_SPAWN_DUP2, read, 0), (os.POSIX_SPAWN_CLOSE, write)]
        devnull = os.open(os.devnull, os.O_WRONLY)
        actions += [(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)]
        argv = [sys.executable, "-I", "-c", _WATCHDOG, owner_label()]
        try:
            env = dict(os.environ)
            os.posix_spawn(sys.executable, argv, env, file_actions=actions, setsid=True)
        finally:
            os.close(read)
            os.close(devnull)
        _keep.append(write)  # never closed: it closes when this process ends
        _watchdog_pid = os.getpid()


_keep: list[int] = []
_refusing = threading.Event()


def refuse_new() -> None:
    """Start no more containers in this process (it is shutting down)."""
    _refusing.set()


class NameTaken(SandboxError):
    """The engine holds a container of the name asked for (`start_linked`)."""


def start_linked(
    kwargs: dict[str, Any],
    *,
    gate: EngineGate,
    output: bool = False,
    urgent: bool = True,
    before_start: Callable[[str], None] | None = None,
) -> tuple[str, ExecSocket]:
    """Create and start a container whose life is linked to this process.

    Args:
        kwargs: ``containers.create`` keyword arguments (from `SandboxConfig.create_kwargs`).
        gate: the engine gate the create and start pass through (the provider's).
        output: also attach standard output and error (read them from the socket).
        urgent: an episode waits for it (else a warm-pool refill: it yields to episodes).
        before_start: called with the container id once it is created and attached,
            before it starts (for example to register a wait for its exit).

    Returns:
        The container id and the attached socket: the link (and the output stream). Close
        the socket to let the container end; it is then removed by the engine.

    Raises:
        ImageError: the image is not in the engine.
        NameTaken: ``kwargs`` names the container, and the engine holds one of that name.
        SandboxUnavailable: the container could not be created or started.
    """
    if _refusing.is_set():
        raise SandboxUnavailable("boxgym is shutting down: no new container is started")
    start_watchdog()
    args = {**kwargs, "auto_remove": True, "stdin_open": True}
    args.pop("detach", None)  # attached standard input, closed when this process lets go
    args["log_config"] = LogConfig(type=LogConfig.types.NONE)
    engine = client()
    args = _seccomp.apply(args, engine)
    fast = _netless.netless(args)
    try:
        with gate.urgent() if urgent else gate.background():
            container_id = _create(engine, args, fast)
            sock: ExecSocket | None = None
            try:
                with docker_errors(container_id):
                    params = {"stdin": 1, "stream": 1, "stdout": int(output), "stderr": int(output)}
                    sock = ExecSocket(engine.api.attach_socket(container_id, params=params))
                    if before_start is not None:
                        before_start(container_id)
                    engine.api.start(container_id)
            except BaseException:
                if sock is not None:
                    sock.close()
                remove_quietly(container_id)
                raise
    finally:
        _netless.release(fast)  # started, its mount keeps the file; or never started
    return container_id, sock


def _create(engine: docker.DockerClient, args: dict[str, Any], fast: dict[str, Any]) -> str:
    """Create from ``fast`` (`_netless.netless` of ``args``), or from ``args`` if refused."""
    image = args.get("image")
    with docker_errors():
        try:
            container_id = _create_as(engine, fast)
        except docker.errors.ImageNotFound as exc:
            raise ImageError(
                f"image {image!r} is not in the engine: build it with `gym images build`"
            ) from exc
        except docker.errors.APIError as exc:
            if fast is args or exc.status_code != 400:  # 400: "bind source path does not exist"
                raise
            container_id = _create_as(engine, args)  # raises again if the mount was not why
            _netless.refused()
            return container_id
    _netless.created(fast)
    return container_id


def _create_as(engine: docker.DockerClient, args: dict[str, Any]) -> str:
    # what `containers.create` adds; the docker SDK's helper pops keys from the dict it gets
    args, name = {**args, "version": engine.api._version}, args.get("name")
    try:
        return str(engine.api.create_container(**_create_container_args(args))["Id"])
    except docker.errors.APIError as exc:
        if exc.status_code == 409 and name:
            raise NameTaken(f"a container named {name} is on the engine") from exc
        raise


def remove_quietly(container_id: str) -> None:
    """Remove a container now, ignoring that it is already gone (or the engine is)."""
    try:
        client().api.remove_container(container_id, force=True)
    except (docker.errors.DockerException, requests.exceptions.RequestException, GymError):
        pass


class _Remover:
    """Daemon threads removing containers in the background.

    At exit, removals still queued are dropped: those containers are linked to this
    process and leave with it (see the module docstring), so exit never waits for them.
    The threads start with the first removal, not at import: importing gym starts no
    thread (and `gym`'s command caps malloc's arenas before any thread starts).
    """

    def __init__(self, workers: int = 4) -> None:
        self._queue: queue.Queue[Callable[[], None]] = queue.Queue()
        self._busy = 0
        self._cond = threading.Condition()
        self._closed = False
        self._workers = workers
        self._started = False

    def submit(self, removal: Callable[[], None]) -> None:
        if self._closed:
            removal()
            return
        self._start()
        self._queue.put(removal)

    def _start(self) -> None:
        """Start the worker threads, once."""
        if self._started:
            return
        with self._cond:
            if self._started:
                return
            for _ in range(self._workers):
                threading.Thread(target=self._work, name="gym-remove", daemon=True).start()
            self._started = True

    def _work(self) -> None:
        while True:
            removal = self._queue.get()
            with self._cond:
                self._busy += 1
            try:
                removal()
            except Exception:  # a removal that fails leaves with its link
                pass
            finally:
                with self._cond:
                    self._busy -= 1
                    self._cond.notify_all()

    def shutdown(self, timeout: float) -> None:
        """Drop the queued removals and wait (at most ``timeout`` s) for those running."""
        self._closed = True
        with contextlib.suppress(queue.Empty):
            while True:
                self._queue.get_nowait()
        with self._cond:
            self._cond.wait_for(lambda: self._busy == 0, timeout=timeout)


_remover = _Remover()


def remove_later(container_id: str) -> None:
    """Remove a container in the background (retried while the engine is away)."""
    later(lambda: remove_container(container_id))


def later(removal: Callable[[], None]) -> None:
    """Run a removal in the background (at once if this process is shutting down)."""
    _remover.submit(removal)


def shutdown_removals(timeout: float = 2.0) -> None:
    """Drop queued removals (their containers leave with this process); wait for the rest."""
    _remover.shutdown(timeout)
