"""One-shot hardened containers: the command is the container's main process.

For work done once in a fresh container (grading), starting the container with the
command itself costs about a bare container's lifecycle, where an exec into a started
container adds a whole runc exec on top. Standard input is attached before the start,
so an archive can be streamed in; output comes back on the attach stream.

A command that reads its input before doing anything (the grading boot) can be
started ahead: `OncePool` keeps such containers waiting, and `run_once` takes one when
it is ready, so the container's start is off the episode's path. Each is used once.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from typing import Any

import docker.errors
import requests.exceptions

from gym._core._errors import SandboxUnavailable
from gym._sandbox._config import SandboxConfig
from gym._sandbox._engine import client, docker_errors
from gym._sandbox._link import remove_later
from gym._sandbox._pool import Started, count, once_pool_for, start_once
from gym._sandbox._stream import ExecResult, pump, result_of

__all__ = ["run_once"]


def run_once(
    config: SandboxConfig,
    argv: Sequence[str],
    *,
    stdin: bytes | None = None,
    timeout: float = 60.0,
    max_output: int = 1 << 20,
    run: str = "adhoc",
    pooled: bool = True,
) -> ExecResult:
    """Run ``argv`` as the main process of a fresh hardened container, then remove it.

    Args:
        config: the sandbox settings (hardening, limits, mounts; boot steps are ignored).
        argv: the command.
        stdin: bytes streamed to the command's standard input, then closed.
        timeout: seconds before the container is removed, whatever it is doing.
        max_output: bytes kept per stream (head and tail).
        run: value of the ``boxgym.run`` label.
        pooled: take a container started ahead, waiting for its input, when one is
            ready (only for a command that reads its input before anything else).

    Raises:
        SandboxUnavailable: the container could not be created or vanished.
    """
    start = time.monotonic()
    started, exit_wait = None, None
    if pooled and stdin is not None:
        started, exit_wait = _take_ready(config, argv, timeout)
    else:
        count("grader", "cold")
    if started is None:
        waits: list[Any] = []
        started = start_once(
            config,
            argv,
            run=run,
            urgent=True,
            before_start=lambda c: waits.append(_wait(c, timeout)),
        )
        exit_wait = waits[0]
    exit_code: int | None = None
    try:
        out, err, timed_out = pump(started.sock, stdin, start + timeout, max_output)
        exit_code = None if timed_out else _exit_code(exit_wait)
        result = result_of(out, err, exit_code, timed_out, start)
        result.oom_killed = _oom_killed(started.id) if exit_code == 137 else False
        return result
    finally:
        _finish(started, exit_wait, kill=exit_code is None)


def _take_ready(
    config: SandboxConfig, argv: Sequence[str], timeout: float
) -> tuple[Started | None, Any]:
    """A waiting container from the pool and its exit wait, or (None, None) if none is ready."""
    started = once_pool_for(config, argv).take()
    if started is None:
        return None, None
    try:
        return started, _wait(started.id, timeout)
    except SandboxUnavailable:  # it died while waiting: start a fresh one instead
        _finish(started, None, kill=True)
        count("grader", "spare_used", -1)
        count("grader", "spare_dead")
        count("grader", "cold")
        return None, None


def _wait(container_id: str, timeout: float) -> Any:
    """Ask the engine to report the container's exit (registered once this returns).

    The engine sends the response's headers as soon as the wait is registered and the
    status when the container exits, so an auto-removed container's status is not lost.
    Reading the status gives up ``timeout`` seconds after the last byte.
    """
    api = client().api
    url = api._url("/containers/{0}/wait", container_id)
    with docker_errors(container_id):
        response = api._post(
            url, params={"condition": "next-exit"}, stream=True, timeout=(60, timeout + 30)
        )
        api._raise_for_status(response)
    return response


def _exit_code(response: Any) -> int | None:
    try:
        return int(response.json()["StatusCode"])
    except (ValueError, KeyError, TypeError, requests.exceptions.RequestException):
        return None


def _finish(started: Started, exit_wait: Any, *, kill: bool) -> None:
    """Let the container go: it exited (and the engine removes it), or is killed now."""
    started.sock.close()
    if exit_wait is not None:
        exit_wait.close()
    if kill:
        remove_later(started.id)


def _oom_killed(container_id: str) -> bool:
    with contextlib.suppress(docker.errors.APIError, requests.exceptions.RequestException):
        state = client().api.inspect_container(container_id)["State"]
        return bool(state.get("OOMKilled"))
    return False
