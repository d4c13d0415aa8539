"""Warm pools of started containers, kept filled by one controller, sized by demand.

`SandboxPool` keeps started sandboxes (container and shell up) for agents and for
grading sandboxes; one-shot grading containers have theirs too (`_once.OncePool`).
Nothing is ever returned to a pool: a used container is removed.

A provider's pools are a `Pools`: the pools themselves (one per config and role), the
controller that fills them, the demand they size themselves by, the container counters
and the engine gate every container of theirs passes through. `DockerSandboxes` owns
one, as an HTTP transport owns its connection pool: two providers share nothing.

The controller fills every pool of its `Pools`, in the background, through the engine
gate's background lane: a refill runs only while no episode waits for the engine. How
many spares a pool keeps is the smaller of its size (the run's concurrency) and the
demand still expected: a runner announces how many episodes are still to start and how
many wait for a grading slot (`SandboxProvider.expect`: each still takes a grader, after
its agent sandbox is given back), and each pool learns from the episodes that ended how
many of its containers an episode uses (none for an agent pool when the policy makes no
tool call). So no spare is started for an episode that will not come, and at the end of
a run none is thrown away unused; `Counts` accounts for every container started.

What stays process-wide is what the process has once: the engine connection, the link
and watchdog of its containers, and `shutdown`, which lets every provider's spares go
when the process ends.
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
import weakref
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from gym._core._errors import GymError, SandboxUnavailable
from gym._sandbox._base import Sandbox
from gym._sandbox._config import SandboxConfig
from gym._sandbox._docker import DockerSandbox
from gym._sandbox._engine import connected, disconnect
from gym._sandbox._gate import EngineGate, default_slots
from gym._sandbox._link import later, refuse_new, remove_later, shutdown_removals

__all__ = [
    "Counts",
    "Demand",
    "Pools",
    "SandboxPool",
    "discard",
    "remove_container_later",
    "shutdown",
]

log = logging.getLogger("gym.sandbox")

DEFAULT_SIZE = int(os.environ.get("GYM_POOL_SIZE", "1"))
"""Spares a pool keeps at most until a runner resizes it (``$GYM_POOL_SIZE``)."""

_FILL_WAIT = 120.0
"""The longest a taker waits for a spare being started before it starts its own."""
T = TypeVar("T")
P = TypeVar("P", bound="_Pool[Any]")


class Counts:
    """Containers started, by role and how (``agent.cold``, ``grader.spare_used``...)."""

    def __init__(self) -> None:
        self._counts: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()

    def add(self, role: str, what: str, n: int = 1) -> None:
        """Add to ``<role>.<what>``."""
        with self._lock:
            self._counts[f"{role}.{what}"] += n

    def snapshot(self) -> dict[str, int]:
        """Every count so far, sorted by name."""
        with self._lock:
            return dict(sorted(self._counts.items()))


def _nothing() -> None:
    """No one to tell."""


class Demand:
    """The episodes the pools can still expect, and how many have come and gone.

    An episode opens when it takes its (lazy) agent sandbox, starts it when its first
    command needs the container, and closes when it gives it back (before grading).

    Args:
        on_change: called when the demand changed (the controller looks again).
    """

    def __init__(self, on_change: Callable[[], None] = _nothing) -> None:
        self._lock = threading.Lock()
        self._on_change = on_change
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
        self._on_change()

    def queue(self, queued: int) -> None:
        """Announce how many closed episodes wait for a grading slot (each still grades)."""
        with self._lock:
            self.queued = queued
        self._on_change()

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
        self._on_change()

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


class _Pool(abc.ABC, Generic[T]):
    """Ready items for one key, filled by the controller up to `target`."""

    role = "agent"

    def __init__(self, size: int, *, pools: Pools, by_demand: bool = False) -> None:
        self.size = size
        self.by_demand = by_demand
        self.pools = pools
        """Whose pool it is: its demand, controller, counters and engine gate."""
        self.demand = pools.demand
        self._ready: collections.deque[T] = collections.deque()
        self.filling = 0
        self.uses = 0
        self.retry_at = 0.0
        self._failures = 0
        self._stopped = False
        self._claimed = 0
        self._promoted = threading.Event()
        self._lock = threading.Condition()
        pools.controller.register(self)

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
            self.pools.counts.add(self.role, "spare_dead")
            self._drop(item)
        self.pools.counts.add(self.role, "spare_used" if found is not None else "cold")
        self.pools.controller.poke()
        return found

    def _wait_for_fill(self, seconds: float) -> None:
        self._claimed += 1
        self._promoted.set()
        self.pools.gate.poke()
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
            with self.pools.gate.promotable(self._promoted):
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
        self.pools.counts.add(self.role, "spare")
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
            self.pools.counts.add(self.role, "spare_dropped")
            self._drop(item)

    def resize(self, size: int) -> None:
        """Change the number of spares kept ready (surplus ones are removed)."""
        with self._lock:
            self.size = size
            surplus = []
            while len(self._ready) > size:
                surplus.append(self._ready.pop())
        for item in surplus:
            self.pools.counts.add(self.role, "spare_dropped")
            self._drop(item)
        self.pools.controller.poke()

    def close(self, *, fast: bool = False) -> None:
        """Stop refilling and remove every ready spare.

        Args:
            fast: only let them go (close their links; the engine removes them).
        """
        with self._lock:
            self._stopped = True
            ready, self._ready = list(self._ready), collections.deque()
        self.pools.controller.unregister(self)
        for item in ready:
            self.pools.counts.add(self.role, "spare_dropped")
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
        by_demand: keep fewer spares when less demand is expected (a provider's pools
            do); otherwise always ``size``.
        pools: the provider's pools it belongs to; a pool made alone gets a `Pools`
            (controller, counters, engine gate) of its own.
    """

    def __init__(
        self,
        config: SandboxConfig,
        size: int = 1,
        *,
        run: str = "pool",
        role: str = "agent",
        by_demand: bool = False,
        pools: Pools | None = None,
    ) -> None:
        self.config = config
        self.run = run
        self.role = role
        super().__init__(size, pools=pools or Pools(size), by_demand=by_demand)

    def acquire(self, on_take: Callable[[], None] | None = None) -> DockerSandbox:
        """Take a ready sandbox, or start one now if none is ready (see `take`)."""
        ready = self.take(on_take)
        if ready is not None:
            return ready
        box = DockerSandbox.create(self.config, run=self.run, role=self.role, gate=self.pools.gate)
        return _prepare(box, True)

    def _make(self) -> DockerSandbox:
        box = DockerSandbox.create(
            self.config, run=self.run, role=self.role, urgent=False, gate=self.pools.gate
        )
        return _prepare(box, False)

    def _alive(self, item: DockerSandbox) -> bool:
        # a spare's container can end while it waits (killed, a `docker rm`, an engine
        # restart): `alive` knows only what a read of its shell saw
        return item.shell.alive and not item.known_gone()

    def _drop(self, item: DockerSandbox) -> None:
        discard(item)

    def _let_go(self, item: DockerSandbox) -> None:
        item.let_go()


def _prepare(sandbox: DockerSandbox, urgent: bool) -> DockerSandbox:
    try:
        sandbox.shell.start(urgent=urgent)
        ready = sandbox.run("true", timeout=30)
        if not ready.ok:  # timed out (its processes were killed) or the shell is broken
            raise SandboxUnavailable(
                f"container {sandbox.container.id[:12]} did not run `true` in its shell "
                f"(exit {ready.exit_code}, timed out: {ready.timed_out})"
            )
    except BaseException:
        sandbox.close()
        raise
    return sandbox


class _Controller:
    """One set of background workers filling every pool of a `Pools`, most needed first.

    As many workers as its engine gate has slots, started with the first pool; they end
    when no pool is left (a closed provider holds no thread).
    """

    def __init__(self, gate: EngineGate) -> None:
        self._gate = gate
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
        while len(self._threads) < self._gate.slots and not self._stopped:
            thread = threading.Thread(target=self._work, name="gym-pool", daemon=True)
            self._threads.append(thread)
            thread.start()

    def _work(self) -> None:
        while True:
            with self._cond:
                pool = self._most_needed()
                while pool is None and not self._stopped and self._pools:
                    self._cond.wait(timeout=1.0)
                    pool = self._most_needed()
                if self._stopped or pool is None:
                    self._threads.remove(threading.current_thread())
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


class Pools:
    """The warm pools of one provider and what fills them (see the module docstring).

    Args:
        size: spares each pool keeps at most (``$GYM_POOL_SIZE``, else 1, by default).
        slots: costly engine operations at once through its gate (`default_slots`).
    """

    def __init__(self, size: int | None = None, *, slots: int | None = None) -> None:
        self.size = DEFAULT_SIZE if size is None else size
        self.gate = EngineGate(slots or default_slots())
        """The engine gate every container of these pools passes through."""
        self.controller = _Controller(self.gate)
        self.demand = Demand(self.controller.poke)
        self.counts = Counts()
        self._pools: dict[Hashable, _Pool[Any]] = {}
        self._lock = threading.Lock()
        _live.add(self)

    def keyed(self, key: Hashable, make: Callable[[int], P]) -> P:
        """The pool kept under ``key``, made by ``make(size)`` on first use."""
        with self._lock:
            pool = self._pools.get(key)
            if pool is None:
                pool = self._pools[key] = make(self.size)
            return pool  # type: ignore[return-value]

    def pool_for(self, config: SandboxConfig, role: str = "agent") -> SandboxPool:
        """The warm pool of sandboxes for a config and role, made on first use."""
        return self.keyed(
            ("sandbox", role, config.key),
            lambda size: SandboxPool(config, size, role=role, by_demand=True, pools=self),
        )

    def resize(self, size: int) -> None:
        """Set how many spares each pool keeps at most (surplus ones are removed)."""
        with self._lock:
            self.size = size
            pools = list(self._pools.values())
        for pool in pools:
            pool.resize(size)

    def close(self, *, fast: bool = True) -> None:
        """Close every pool and let its spares go; pools used later start afresh.

        Args:
            fast: let spares go without waiting for the engine (their links close).
        """
        with self._lock:
            pools = list(self._pools.values())
            self._pools.clear()
        for pool in pools:
            with contextlib.suppress(Exception):
                pool.close(fast=fast)


_live: weakref.WeakSet[Pools] = weakref.WeakSet()
"""Every `Pools` of this process, for `shutdown`."""


def discard(sandbox: Sandbox) -> None:
    """Remove a sandbox without waiting (a Docker one ends with its link; see `_link`)."""
    if isinstance(sandbox, DockerSandbox):
        sandbox.let_go()
    else:
        later(sandbox.close)


def remove_container_later(container_id: str) -> None:
    """Remove a container (by id) in the background; at once if shutting down."""
    remove_later(container_id)


def shutdown() -> None:
    """Let every provider's spares go, start no more containers; for when this process ends.

    Nothing waits for the engine: every container is linked to this process and leaves
    with it (`gym._sandbox._link`), its watchdog sweeping up after.
    """
    refuse_new()
    live = list(_live)
    for pools in live:
        pools.controller.stop()
    for pools in live:
        pools.close(fast=True)
    shutdown_removals()
    if connected():
        disconnect()


atexit.register(shutdown)
