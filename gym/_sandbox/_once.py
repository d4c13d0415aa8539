"""Grading containers: their settings, and one-shot containers (the command is pid 1).

Every grading container, whatever the family, gets the grading settings (`graded`): it is
used once, by the harness only (``disposable``), and has no network but its own loopback
(a family's service listens there). A provider hands out two kinds, both through it:

- a one-shot container (`one_shot`, a provider's `run_once`: how code is graded): the
  command is the container's main process. Starting the container with the command
  itself costs about a bare container's lifecycle, where an exec into a started
  container adds a whole runc exec on top. Standard input is attached before the start,
  so an archive can be streamed in; output comes back on the attach stream. A command
  that reads its input before doing anything (the grading boot) can be started ahead:
  `OncePool` keeps such containers waiting, and `one_shot` takes one when it is ready,
  so the container's start is off the episode's path. Each is used once.
- a booted grading sandbox (`SandboxProvider.grader`, how SQL and Support grade): a
  sandbox from the provider's ``grader`` warm pools, with its boot steps run.

This module and `SandboxConfig.create_kwargs` are all there is to a grading container's
settings; `_link.start_linked` starts it.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import docker.errors
import requests.exceptions

from gym._core._errors import SandboxUnavailable, UnsafeConfig
from gym._sandbox import _oom
from gym._sandbox._config import SandboxConfig
from gym._sandbox._engine import client, docker_errors, labels
from gym._sandbox._gate import EngineGate
from gym._sandbox._link import remove_later, start_linked
from gym._sandbox._pool import Pools, _Pool
from gym._sandbox._stream import ExecResult, ExecSocket, pump, result_of

__all__ = ["OncePool", "Started", "graded", "once_pool_for", "one_shot", "start_once"]


def graded(config: SandboxConfig) -> SandboxConfig:
    """``config`` with the grading settings: used once, by the harness only, no network.

    Raises:
        UnsafeConfig: the config has a network (a grading container has only its own
            loopback, where a family's service may listen).
    """
    if config.network != "none":
        raise UnsafeConfig(
            f"a grading container has no network but its own loopback, not {config.network!r}:"
            " run the family's service inside the container"
        )
    return config if config.disposable else config.model_copy(update={"disposable": True})


class Started(NamedTuple):
    """A started one-shot container: its id and its attached socket (input and output)."""

    id: str
    sock: ExecSocket


def start_once(
    config: SandboxConfig,
    argv: Sequence[str],
    *,
    run: str,
    urgent: bool,
    gate: EngineGate,
    before_start: Callable[[str], None] | None = None,
) -> Started:
    """Start a linked one-shot container running ``argv``, its streams attached."""
    tags = labels(run, f"once-{uuid.uuid4().hex[:16]}", "grader")
    kwargs = config.create_kwargs(tags, command=list(argv))
    container_id, sock = start_linked(
        kwargs, gate=gate, output=True, urgent=urgent, before_start=before_start
    )
    return Started(container_id, sock)


class OncePool(_Pool[Started]):
    """Started one-shot containers whose command waits for its input (grading).

    A spare's main process has started and blocks reading standard input, so taking
    one skips the container's start; closing the input ends it if it was never used.

    Args:
        config: the container settings.
        argv: the main process of every container of the pool.
        size: the most spares kept ready.
        pools: the provider's pools it belongs to.
        by_demand: keep fewer spares when less demand is expected (see `SandboxPool`).
    """

    role = "grader"

    def __init__(
        self,
        config: SandboxConfig,
        argv: Sequence[str],
        size: int = 1,
        *,
        pools: Pools,
        by_demand: bool = False,
    ) -> None:
        self.config = config
        self.argv = list(argv)
        super().__init__(size, pools=pools, by_demand=by_demand)

    def _make(self) -> Started:
        return start_once(self.config, self.argv, run="pool", urgent=False, gate=self.pools.gate)

    def _alive(self, item: Started) -> bool:
        # a spare writes nothing before its input: a readable end is a container gone
        return not item.sock.ended_by_peer()

    def _drop(self, item: Started) -> None:
        item.sock.close()
        remove_later(item.id)

    def _let_go(self, item: Started) -> None:
        item.sock.close()


def once_pool_for(pools: Pools, config: SandboxConfig, argv: Sequence[str]) -> OncePool:
    """The pool of waiting one-shot containers for a config and command, made on first use."""
    return pools.keyed(
        ("once", config.key, tuple(argv)),
        lambda size: OncePool(config, argv, size, pools=pools, by_demand=True),
    )


def one_shot(
    pools: Pools,
    config: SandboxConfig,
    argv: Sequence[str],
    *,
    stdin: bytes | None = None,
    timeout: float = 60.0,
    max_output: int = 1 << 20,
    run: str = "adhoc",
    pooled: bool = True,
) -> ExecResult:
    """Run ``argv`` as the main process of a fresh grading container, then remove it.

    Args:
        pools: the warm pools, counters and engine gate of the provider it runs for.
        config: the sandbox settings (hardening, limits, mounts; boot steps are ignored),
            given the grading settings (`graded`).
        argv: the command.
        stdin: bytes streamed to the command's standard input, then closed.
        timeout: seconds before the container is removed, whatever it is doing.
        max_output: bytes kept per stream (head and tail).
        run: value of the ``boxgym.run`` label.
        pooled: take a container started ahead, waiting for its input, when one is
            ready (only for a command that reads its input before anything else).

    Raises:
        SandboxUnavailable: the container could not be created or vanished.
        UnsafeConfig: the config has a network (see `graded`).
    """
    config = graded(config)
    _oom.watch()  # a kill at its memory limit is then the engine's record (`_memory_killed`)
    start = time.monotonic()
    started, exit_wait = None, None
    if pooled and stdin is not None:
        started, exit_wait = _take_ready(pools, config, argv, timeout)
    else:
        pools.counts.add("grader", "cold")
    if started is None:
        waits: list[Any] = []
        started = start_once(
            config,
            argv,
            run=run,
            urgent=True,
            gate=pools.gate,
            before_start=lambda c: waits.append(_wait(c, timeout)),
        )
        exit_wait = waits[0]
    exit_code: int | None = None
    try:
        out, err, timed_out = pump(started.sock, stdin, start + timeout, max_output)
        exit_code = None if timed_out else _exit_code(exit_wait)
        result = result_of(out, err, exit_code, timed_out, start)
        result.oom_killed = exit_code == 137 and _memory_killed(started.id)
        return result
    finally:
        _finish(started, exit_wait, kill=exit_code is None)


def _take_ready(
    pools: Pools, config: SandboxConfig, argv: Sequence[str], timeout: float
) -> tuple[Started | None, Any]:
    """A waiting container from the pool and its exit wait, or (None, None) if none is ready."""
    started = once_pool_for(pools, config, argv).take()
    if started is None:
        return None, None
    try:
        return started, _wait(started.id, timeout)
    except SandboxUnavailable:  # it died while waiting: start a fresh one instead
        _finish(started, None, kill=True)
        pools.counts.add("grader", "spare_used", -1)
        pools.counts.add("grader", "spare_dead")
        pools.counts.add("grader", "cold")
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


def _memory_killed(container_id: str) -> bool:
    """Whether the container's main process was killed at its memory limit.

    The engine's events say so (`_oom.memory_killed`); an auto-removed container cannot
    be inspected after its end, so its state is asked only when they do not.
    """
    if _oom.memory_killed(container_id):
        return True
    with contextlib.suppress(docker.errors.APIError, requests.exceptions.RequestException):
        state = client().api.inspect_container(container_id)["State"]
        return bool(state.get("OOMKilled"))
    return False
