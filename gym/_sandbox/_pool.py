"""Warm pools of started containers, kept filled by one controller, sized by demand.

Two kinds of pool: `SandboxPool` keeps started sandboxes (container and shell up) for
agents and for grading sandboxes; `OncePool` keeps started one-shot containers whose
main process waits for its input on standard input (grading, see `run_once`). Nothing
is ever returned to a pool: a used container is removed.

One controller fills every pool, in the background, through the engine gate's
background lane: a refill runs only while no episode waits for the engine. How many
spares a pool keeps is the smaller of its size (the run's concurrency) and the demand
still expected: a runner announces how many episodes are still to start
(`expect_episodes`) and how many wait for a grading slot (`expect_gradings`: each still
takes a grader, after its agent sandbox is given back), and each pool learns from the
episodes that ended how many of its containers an episode uses (none for an agent pool
when the policy makes no tool call).
So no spare is started for an episode that will not come, and at the end of a run
none is thrown away unused; `container_counts` accounts for every container started.
"""

from __future__ import annotations

import abc
import atexit
import collections
import contextlib
import logging
import math
import os
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Generic, NamedTuple, TypeVar

from gym._core._errors import GymError
from gym._sandbox._base import Sandbox
from gym._sandbox._config import SandboxConfig
from gym._sandbox._docker import DockerSandbox
from gym._sandbox._engine import connected, disconnect, labels
from gym._sandbox._gate import gate
from gym._sandbox._link import (
    later,
    refuse_new,
    remove_later,
    shutdown_removals,
    start_linked,
)
from gym._sandbox._stream import ExecSocket

__all__ = [
    "OncePool",
    "SandboxPool",
    "Started",
    "container_counts",
    "demand",
    "discard",
    "expect_episodes",
    "expect_gradings",
    "once_pool_for",
    "pool_for",
    "remove_container_later",
    "set_pool_size",
    "shutdown_pools",
]

log = logging.getLogger("gym.sandbox")

_DEFAULT_SIZE = int(os.environ.get("GYM_POOL_SIZE", "1"))
_size = _DEFAULT_SIZE
_counts: collections.Counter[str] = collections.Counter()
_counts_lock = threading.Lock()

_FILL_WAIT = 120.0
"""The longest a taker waits for a spare being started before it starts its own."""
T = TypeVar("T")


def count(role: str, what: str, n: int = 1) -> None:
    """Add to the container accounting (``<role>.<what>``)."""
    with _counts_lock:
        _counts[f"{role}.{what}"] += n


def container_counts() -> dict[str, int]:
    """Containers this process started, by role: on demand, as spares, spares used/dropped."""
    with _counts_lock:
        return dict(sorted(_counts.items()))


class Demand:
    """The episodes the pools can still expect, and how many have come and gone.

    An episode opens when it takes its (lazy) agent sandbox, starts it when its first
    command needs the container, and closes when it gives it back (before grading).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.pending: int | None = None
        """Episodes not yet begun, announced by a runner (None: nobody said)."""
        self.open = 0
        self.open_unstarted = 0
        self.closed = 0
        self.queued = 0
        """Episodes that gave their sandbox back and wait for a grading slot."""

    def expect(self, pending: int | None) -> None:
        """Announce how many episodes are still to begin (None: unknown, keep full pools)."""
        with self._lock:
            self.pending = pending
        controller.poke()

    def queue(self, queued: int) -> None:
        """Announce how many closed episodes wait for a grading slot (each still grades)."""
        with self._lock:
            self.queued = queued
        controller.poke()

    def opened(self) -> None:
        """An episode began (took a lazy sandbox)."""
        with self._lock:
            self.open += 1
            self.open_unstarted += 1

    def started(self) -> None:
        """An episode's sandbox needed its container."""
        with self._lock:
            self.open_unstarted -= 1

    def closed_one(self, *, started: bool) -> None:
        """An episode gave its sandbox back."""
        with self._lock:
            self.open -= 1
            self.open_unstarted -= not started
            self.closed += 1
        controller.poke()

    def basis(self, role: str) -> tuple[int, int] | None:
        """Episodes still to take a container of this role, and those past it (or None).

        An agent container is taken while the episode is open, a grader after it
        closed: an episode waiting for a grading slot still needs its grader.
        """
        with self._lock:
            if self.pending is None:
                return None
            if role == "agent":
                return self.pending + self.open_unstarted, self.closed
            return self.pending + self.open + self.queued, self.closed - self.queued


demand = Demand()
"""The process-wide demand every pool sizes itself by."""


def expect_episodes(pending: int | None) -> None:
    """Tell the pools how many episodes are still to begin (None: unknown)."""
    demand.expect(pending)


def expect_gradings(queued: int) -> None:
    """Tell the pools how many episodes wait for a grading slot (each takes a grader)."""
    demand.queue(queued)


class _Pool(abc.ABC, Generic[T]):
    """Ready items for one key, filled by the controller up to `target`."""

    role = "agent"

    def __init__(self, size: int, *, by_demand: bool = False, of: Demand | None = None) -> None:
        self.size = size
        self.by_demand = by_demand
        self.demand = of or demand
        self._ready: collections.deque[T] = collections.deque()
        self.filling = 0
        self.uses = 0
        self.retry_at = 0.0
        self._failures = 0
        self._stopped = False
        self._claimed = 0
        self._promoted = threading.Event()
        self._lock = threading.Condition()
        controller.register(self)

    @abc.abstractmethod
    def _make(self) -> T:
        """Start one spare (in the engine's background lane)."""

    @abc.abstractmethod
    def _alive(self, item: T) -> bool:
        """Whether a spare is still usable."""

    @abc.abstractmethod
    def _drop(self, item: T) -> None:
        """Remove a spare."""

    def target(self) -> int:
        """How many spares to keep now: the size, or less if less demand is expected."""
        if self._stopped:
            return 0
        basis = self.demand.basis(self.role) if self.by_demand else None
        if basis is None:
            return self.size
        to_come, gone = basis
        per_episode = self.uses / gone if gone > 0 else float(self.uses > 0)
        return min(self.size, math.ceil(per_episode * to_come - 1e-9))

    def deficit(self) -> int:
        """Spares missing (target minus ready and being started)."""
        with self._lock:
            return self.target() - len(self._ready) - self.filling

    def take(self, on_take: Callable[[], None] | None = None) -> T | None:
        """A ready spare, or None when there is none (the caller then starts one).

        When none is ready but one is being started, wait for it (its start is promoted
        to urgent): it is ready no later than a fresh start would be.

        Args:
            on_take: called under the pool's lock as the taker arrives, for the demand
                change the take stands for (an episode starting its container): a
                spare whose start ends at that moment then sees either the demand with
                the taker in it, or the taker waiting for it; never neither (it would be
                dropped and the taker start one cold).
        """
        found: T | None = None
        dead: list[T] = []
        give_up = time.monotonic() + _FILL_WAIT
        with self._lock:
            self.uses += 1
            if on_take is not None:
                on_take()
            while found is None:
                while self._ready and found is None:
                    item = self._ready.popleft()
                    if self._alive(item):
                        found = item
                    else:
                        dead.append(item)
                # a pool sized 0 hands out nothing started before (its settings may differ)
                if found is not None or self.filling <= self._claimed or self.size == 0:
                    break
                left = give_up - time.monotonic()
                if left <= 0:  # a start that never ends: the caller starts its own
                    log.warning("warm pool: no spare after %.0f s; starting one now", _FILL_WAIT)
                    break
                self._wait_for_fill(left)
        for item in dead:
            count(self.role, "spare_dead")
            self._drop(item)
        count(self.role, "spare_used" if found is not None else "cold")
        controller.poke()
        return found

    def _wait_for_fill(self, seconds: float) -> None:
        self._claimed += 1
        self._promoted.set()
        gate.poke()
        try:
            self._lock.wait(timeout=seconds)
        finally:
            self._claimed -= 1
            if not self._claimed:
                self._promoted.clear()

    def reserve(self) -> None:
        """Count a spare as being started (the controller calls `fill_one` next)."""
        with self._lock:
            self.filling += 1

    def fill_one(self) -> None:
        """Start one spare and keep it (or drop it if no longer wanted); run by the controller."""
        try:
            with gate.promotable(self._promoted):
                item = self._make()
        except Exception as exc:  # noqa: BLE001 - a dead worker would leave `filling` counted
            self._failures += 1
            self.retry_at = time.monotonic() + min(30.0, 0.5 * 2**self._failures)
            if isinstance(exc, GymError):
                log.warning("warm pool could not start a container: %s", exc)
            else:
                log.exception("warm pool: unexpected error starting a container")
            with self._lock:
                self.filling -= 1
                self._lock.notify_all()
            return
        self._failures = 0
        count(self.role, "spare")
        with self._lock:
            self.filling -= 1
            # kept up to the size even if the demand fell while it started: it is started
            # already, and a taker may be a moment away (a graded episode gives its agent
            # sandbox back, lowering the demand, just before it takes its grader)
            keep = not self._stopped and len(self._ready) < max(self.size, self._claimed)
            if keep:
                self._ready.append(item)
            self._lock.notify_all()
        if not keep:
            count(self.role, "spare_dropped")
            self._drop(item)

    def resize(self, size: int) -> None:
        """Change the number of spares kept ready (surplus ones are removed)."""
        with self._lock:
            self.size = size
            surplus = []
            while len(self._ready) > size:
                surplus.append(self._ready.pop())
        for item in surplus:
            count(self.role, "spare_dropped")
            self._drop(item)
        controller.poke()

    def close(self, *, fast: bool = False) -> None:
        """Stop refilling and remove every ready spare.

        Args:
            fast: only let them go (close their links; the engine removes them).
        """
        with self._lock:
            self._stopped = True
            ready, self._ready = list(self._ready), collections.deque()
        controller.unregister(self)
        for item in ready:
            count(self.role, "spare_dropped")
            self._let_go(item) if fast else self._drop(item)

    def _let_go(self, item: T) -> None:
        """Let a spare go without waiting for the engine (the default removes it)."""
        self._drop(item)


class SandboxPool(_Pool[DockerSandbox]):
    """Keeps up to ``size`` started sandboxes (container and shell up) for one config.

    `acquire` hands out a ready sandbox at once, or starts one when none is ready; the
    controller refills the pool in the background, as far as demand is expected.
    Sandboxes are never returned to a pool: a used one is removed (`discard`).

    Args:
        config: the settings of every sandbox of the pool.
        size: the most spares kept ready.
        run: the ``boxgym.run`` label of its containers.
        role: ``agent`` or ``grader`` (what the containers are for).
        by_demand: keep fewer spares when less demand is expected (the process-wide
            pools do); otherwise always ``size``.
    """

    def __init__(
        self,
        config: SandboxConfig,
        size: int = 1,
        *,
        run: str = "pool",
        role: str = "agent",
        by_demand: bool = False,
    ) -> None:
        self.config = config
        self.run = run
        self.role = role
        super().__init__(size, by_demand=by_demand)

    def acquire(self, on_take: Callable[[], None] | None = None) -> DockerSandbox:
        """Take a ready sandbox, or start one now if none is ready (see `take`)."""
        ready = self.take(on_take)
        if ready is not None:
            return ready
        return _prepare(DockerSandbox.create(self.config, run=self.run, role=self.role), True)

    def _make(self) -> DockerSandbox:
        box = DockerSandbox.create(self.config, run=self.run, role=self.role, urgent=False)
        return _prepare(box, False)

    def _alive(self, item: DockerSandbox) -> bool:
        return item.shell.alive

    def _drop(self, item: DockerSandbox) -> None:
        discard(item)

    def _let_go(self, item: DockerSandbox) -> None:
        item.let_go()


def _prepare(sandbox: DockerSandbox, urgent: bool) -> DockerSandbox:
    try:
        sandbox.shell.start(urgent=urgent)
        sandbox.run("true", timeout=30)
    except BaseException:
        sandbox.close()
        raise
    return sandbox


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
    before_start: Callable[[str], None] | None = None,
) -> Started:
    """Start a linked one-shot container running ``argv``, its streams attached."""
    tags = labels(run, f"once-{uuid.uuid4().hex[:16]}", "grader")
    kwargs = config.create_kwargs(tags, command=list(argv))
    container_id, sock = start_linked(kwargs, output=True, urgent=urgent, before_start=before_start)
    return Started(container_id, sock)


class OncePool(_Pool[Started]):
    """Started one-shot containers whose command waits for its input (grading).

    A spare's main process has started and blocks reading standard input, so taking
    one skips the container's start; closing the input ends it if it was never used.

    Args:
        config: the container settings.
        argv: the main process of every container of the pool.
        size: the most spares kept ready.
        by_demand: keep fewer spares when less demand is expected (see `SandboxPool`).
    """

    role = "grader"

    def __init__(
        self, config: SandboxConfig, argv: Sequence[str], size: int = 1, *, by_demand: bool = False
    ) -> None:
        self.config = config
        self.argv = list(argv)
        super().__init__(size, by_demand=by_demand)

    def _make(self) -> Started:
        return start_once(self.config, self.argv, run="pool", urgent=False)

    def _alive(self, item: Started) -> bool:
        return True  # a dead one shows as an empty stream: run_once reports it

    def _drop(self, item: Started) -> None:
        item.sock.close()
        remove_later(item.id)

    def _let_go(self, item: Started) -> None:
        item.sock.close()


class _Controller:
    """One set of background workers filling every pool, most needed first."""

    def __init__(self) -> None:
        self._pools: list[_Pool[object]] = []
        self._cond = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._stopped = False

    def register(self, pool: _Pool[T]) -> None:
        with self._cond:
            self._pools.append(pool)  # type: ignore[arg-type]
            self._start_workers()
            self._cond.notify_all()

    def unregister(self, pool: _Pool[T]) -> None:
        with self._cond:
            if pool in self._pools:
                self._pools.remove(pool)  # type: ignore[arg-type]

    def poke(self) -> None:
        """Look at the pools again (demand or contents changed)."""
        with self._cond:
            self._cond.notify_all()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def _start_workers(self) -> None:
        while len(self._threads) < gate.slots and not self._stopped:
            thread = threading.Thread(target=self._work, name="gym-pool", daemon=True)
            self._threads.append(thread)
            thread.start()

    def _work(self) -> None:
        while True:
            with self._cond:
                pool = self._most_needed()
                while pool is None and not self._stopped:
                    self._cond.wait(timeout=1.0)
                    pool = self._most_needed()
                if self._stopped or pool is None:
                    return
                pool.reserve()
            pool.fill_one()

    def _most_needed(self) -> _Pool[object] | None:
        now = time.monotonic()
        best, most = None, 0
        for pool in self._pools:
            need = pool.deficit() if pool.retry_at <= now else 0
            if need > most:
                best, most = pool, need
        return best


controller = _Controller()
_pools: dict[str, SandboxPool] = {}
_once_pools: dict[tuple[str, tuple[str, ...]], OncePool] = {}
_pools_lock = threading.Lock()


def pool_for(config: SandboxConfig, role: str = "agent") -> SandboxPool:
    """The process-wide warm pool for a config (and role), created on first use."""
    key = f"{role}:{config.key}"
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = SandboxPool(config, _size, role=role, by_demand=True)
        return pool


def once_pool_for(config: SandboxConfig, argv: Sequence[str]) -> OncePool:
    """The process-wide pool of waiting one-shot containers for a config and command."""
    key = (config.key, tuple(argv))
    with _pools_lock:
        pool = _once_pools.get(key)
        if pool is None:
            pool = _once_pools[key] = OncePool(config, argv, _size, by_demand=True)
        return pool


def set_pool_size(size: int) -> None:
    """Set how many spares each pool keeps at most (for example the run's concurrency)."""
    global _size
    with _pools_lock:
        _size = size
        pools: list[_Pool[object]] = [*_pools.values(), *_once_pools.values()]  # type: ignore[list-item]
    for pool in pools:
        pool.resize(size)


def discard(sandbox: Sandbox) -> None:
    """Remove a sandbox without waiting (a Docker one ends with its link; see `_link`)."""
    if isinstance(sandbox, DockerSandbox):
        sandbox.let_go()
    else:
        later(sandbox.close)


def remove_container_later(container_id: str) -> None:
    """Remove a container (by id) in the background; at once if shutting down."""
    remove_later(container_id)


def shutdown_pools() -> None:
    """Let every spare go, start no more containers; for when this process ends.

    Nothing waits for the engine: every container is linked to this process and leaves
    with it (`gym._sandbox._link`), its watchdog sweeping up after.
    """
    refuse_new()
    controller.stop()
    with _pools_lock:
        pools: list[_Pool[object]] = [*_pools.values(), *_once_pools.values()]  # type: ignore[list-item]
        _pools.clear()
        _once_pools.clear()
    for pool in pools:
        with contextlib.suppress(Exception):
            pool.close(fast=True)
    shutdown_removals()
    if connected():
        disconnect()


atexit.register(shutdown_pools)
