"""How many episodes run at once on this machine: fixed, or adapted while the run goes.

`Limiter` holds the number of episodes allowed to act at once. Fixed when the user
asks (``--concurrency N``); otherwise (the default) it starts at the core count and is
reconsidered every second from what the machine says:

- it **backs off** (by a quarter) when memory runs short, and by one when the engine's
  recent operations take much longer than its best (containers queue in the engine);
- it **ramps up** by one while the limit is what holds episodes back, the CPU has room
  and the engine answers as fast as it did at its best;
- otherwise it holds.

So a run that waits on a model server (little CPU) climbs until memory or the engine
say stop, and a run that waits on containers settles where the CPU is used up, without
the cliff of too many container starts fighting for the same cores.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import NamedTuple

__all__ = ["HostProbe", "Limiter", "Sample"]


class Sample(NamedTuple):
    """What the machine says at one moment (None where it cannot tell)."""

    cpu_busy: float | None
    """Share of all cores busy since the previous sample (0 to 1)."""
    mem_available_mb: float | None
    """Memory available for new work, in MiB."""
    mem_total_mb: float | None
    """Total memory, in MiB."""
    engine_latency_s: float | None
    """Median duration of the engine's recent costly operations."""


class HostProbe:
    """Reads CPU and memory from /proc, and the engine's latency from its provider (Linux).

    Args:
        engine_latency: the engine's load (`SandboxProvider.latency` of the run's
            provider); None reads none.
    """

    def __init__(self, engine_latency: Callable[[], float | None] | None = None) -> None:
        self._engine_latency = engine_latency or _unknown
        self._last = _cpu_times()

    def __call__(self) -> Sample:
        now = _cpu_times()
        busy = None
        if now is not None and self._last is not None:
            total, idle = now[0] - self._last[0], now[1] - self._last[1]
            busy = 1.0 - idle / total if total > 0 else None
        self._last = now
        available, total_mb = _memory()
        return Sample(busy, available, total_mb, self._engine_latency())


def _unknown() -> float | None:
    return None


def _cpu_times() -> tuple[float, float] | None:
    try:
        with open("/proc/stat") as fh:
            fields = [float(x) for x in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return sum(fields), fields[3] + (fields[4] if len(fields) > 4 else 0.0)


def _memory() -> tuple[float | None, float | None]:
    values: dict[str, float] = {}
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                values[key] = float(rest.split()[0]) / 1024
    except (OSError, ValueError, IndexError):
        return None, None
    return values.get("MemAvailable"), values.get("MemTotal")


class Limiter:
    """The number of episodes that may act at once (see the module docstring).

    Args:
        fixed: a fixed limit (``--concurrency N``); None adapts it.
        start: the first adaptive limit (the core count by default).
        cap: the most the adaptive limit climbs to.
        probe: where samples come from (a `HostProbe` without the engine's latency by
            default; the local executor gives one that reads its run's provider).
        interval: seconds between two reconsiderations.
    """

    def __init__(
        self,
        fixed: int | None = None,
        *,
        start: int | None = None,
        cap: int = 64,
        probe: Callable[[], Sample] | None = None,
        interval: float = 1.0,
    ) -> None:
        cores = len(os.sched_getaffinity(0))
        self.fixed = fixed
        self.cap = max(1, fixed or cap)
        self.value = max(1, min(self.cap, fixed or start or cores))
        self.interval = interval
        self._probe = probe or HostProbe()
        self._best_latency: float | None = None
        self._next = time.monotonic() + interval
        self.history: list[tuple[float, int, str]] = []
        """(time, limit, why) at each change."""

    @property
    def adaptive(self) -> bool:
        """Whether the limit adapts (no fixed value was asked for)."""
        return self.fixed is None

    def update(self, *, waiting: bool, now: float | None = None) -> int:
        """Reconsider the limit if an interval has passed; return it.

        Args:
            waiting: episodes are waiting because of the limit (it holds them back).
            now: the current monotonic time (for tests).
        """
        now = time.monotonic() if now is None else now
        if not self.adaptive or now < self._next:
            return self.value
        self._next = now + self.interval
        change, why = self.decide(self._probe(), waiting=waiting)
        value = max(1, min(self.cap, self.value + change))
        if value != self.value:
            self.value = value
            self.history.append((now, value, why))
        return self.value

    def decide(self, sample: Sample, *, waiting: bool) -> tuple[int, str]:
        """The change to make for one sample, and why (0 and '' to hold)."""
        latency = sample.engine_latency_s
        if latency is not None and latency > 0:
            self._best_latency = min(latency, self._best_latency or latency)
        ratio = latency / self._best_latency if latency and self._best_latency else 1.0
        if _memory_short(sample):
            return -max(1, self.value // 4), "memory short"
        if ratio > 3.0:
            return -1, f"engine {ratio:.1f}x slower than its best"
        room = sample.cpu_busy is None or sample.cpu_busy < 0.85
        if waiting and room and ratio < 1.5:
            return 1, "room on the CPU and the engine"
        return 0, ""


def _memory_short(sample: Sample) -> bool:
    if sample.mem_available_mb is None:
        return False
    floor = max(512.0, 0.05 * (sample.mem_total_mb or 0.0))
    return sample.mem_available_mb < floor
