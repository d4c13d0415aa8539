"""A bounded, prioritised gate in front of the Docker engine's costly operations.

Starting a container or an exec costs the engine CPU (runc, the shim, cgroups); past a
few at once they only queue inside the engine and slow each other down. The gate lets
at most ``slots`` of this process's costly engine operations run at once. Work an
episode waits for (``urgent``) goes first; warm-pool refills (``background``) run only
while no urgent operation waits, and never take the last slot, so a refill never
competes with a running episode.

The gate also keeps the recent latency of its operations, which the runner's adaptive
concurrency reads as the engine's load (`SandboxProvider.latency`).

Each `DockerSandboxes` provider owns its gate, as it owns its warm pools: the sandboxes
it starts pass through it. `standalone` is the gate of sandboxes started outside any
provider (`DockerSandbox.create` called directly, in tests and benchmarks).
"""

from __future__ import annotations

import collections
import contextlib
import os
import threading
import time
from collections.abc import Iterator

__all__ = ["EngineGate", "default_slots", "standalone"]


def default_slots() -> int:
    """``$GYM_ENGINE_SLOTS``, or the CPUs this process may use (at least 2)."""
    configured = os.environ.get("GYM_ENGINE_SLOTS", "")
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    return max(2, len(os.sched_getaffinity(0)))


class EngineGate:
    """At most ``slots`` costly engine operations at once, urgent ones first.

    Args:
        slots: operations allowed at once.
    """

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self._cond = threading.Condition()
        self._busy = 0
        self._background = 0
        self._urgent_waiting = 0
        self._latency: collections.deque[float] = collections.deque(maxlen=64)
        self._local = threading.local()

    @contextlib.contextmanager
    def urgent(self) -> Iterator[None]:
        """Hold a slot for work an episode waits for."""
        with self._cond:
            self._urgent_waiting += 1
            while self._busy >= self.slots:
                self._cond.wait()
            self._urgent_waiting -= 1
            self._busy += 1
        start = time.monotonic()
        try:
            yield
        finally:
            self._leave(time.monotonic() - start, background=False)

    @contextlib.contextmanager
    def background(self) -> Iterator[None]:
        """Hold a slot for work nobody waits for (a refill), only when the engine is idle.

        Work that someone starts waiting for meanwhile is promoted (see `promotable`):
        it then only needs a free slot.
        """
        promoted = getattr(self._local, "promoted", None)
        with self._cond:
            while not self._background_may_start(promoted):
                self._cond.wait()
            self._busy += 1
            self._background += 1
        start = time.monotonic()
        try:
            yield
        finally:
            self._leave(time.monotonic() - start, background=True)

    def _background_may_start(self, promoted: threading.Event | None) -> bool:
        spare = self.slots - self._busy
        if promoted is not None and promoted.is_set():
            return spare >= 1
        return self._urgent_waiting == 0 and spare >= (2 if self.slots > 1 else 1)

    @contextlib.contextmanager
    def promotable(self, promoted: threading.Event) -> Iterator[None]:
        """Background work of this thread becomes urgent once ``promoted`` is set."""
        self._local.promoted = promoted
        try:
            yield
        finally:
            self._local.promoted = None

    def poke(self) -> None:
        """Wake the waiters (a promotion happened)."""
        with self._cond:
            self._cond.notify_all()

    def _leave(self, seconds: float, *, background: bool) -> None:
        with self._cond:
            self._busy -= 1
            self._background -= background
            self._latency.append(seconds)
            self._cond.notify_all()

    def latency(self) -> float | None:
        """The median duration of the recent operations, in seconds (None before any)."""
        with self._cond:
            recent = sorted(self._latency)
        return recent[len(recent) // 2] if recent else None

    def busy(self) -> int:
        """Operations running now."""
        with self._cond:
            return self._busy


standalone = EngineGate(default_slots())
"""The gate of sandboxes started outside any provider (a provider has its own)."""
