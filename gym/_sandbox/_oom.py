"""What the engine saw of a container's end: its main process killed at the memory limit.

An agent container's main process is its keeper. When the keeper dies the engine
removes the container at once (``auto_remove``), so nothing is left to inspect. But the
engine reports each kill by a container's memory limit as an ``oom`` event, and each
container's end as ``die`` with its main process's exit code. One listener per process
streams both, for this process's containers only (its owner label), from before its
first keeper container starts, and keeps the last few thousand.

`memory_killed` answers for one container: it ended by SIGKILL (exit 137) within a few
seconds of a kill by its memory limit. Nothing inside a container can send its keeper
SIGKILL (as the pid namespace's init it gets no signal it has no handler for); outside,
the engine does when asked to stop or kill it (the harness never asks during an
episode; a person might), and that comes with no ``oom``. What fills an agent
container's memory is the agent's: its processes, and what they hold outside any
process's resident memory (files in its tmpfs mounts, a memfd, pipe buffers), which the
kernel does not count when it picks whom to kill. A red-team helper filled a memfd
held by a process with its ``oom_score_adj`` set back to 0: the kernel killed the
keeper, the largest process left, and the agent's fail was ``infra_error``.

Under cgroup v1 (the engines boxgym was measured on) the engine's ``oom`` is a kill by the
container's own limit only. Under cgroup v2 it follows any kill of a process of the
container, a host-wide one too: a host out of memory that kills a keeper would read as
the agent's. Not handled here: size the host so that its own memory never runs out.
"""

from __future__ import annotations

import collections
import os
import threading
import time
from typing import Any

from gym._sandbox._engine import LABEL_OWNER, client, owner_label

__all__ = ["memory_killed", "watch"]

_KEPT = 4096
"""Containers whose events are kept (the oldest are dropped first)."""
_NEAR_NS = 5_000_000_000
"""A memory kill this close before a container's end (ns) is taken as its cause."""
_SUBSCRIBE_S = 5.0
"""How long the first keeper container waits for the listener to be subscribed."""


class _Listener:
    """One stream of the engine's ``oom`` and ``die`` events for this process's containers."""

    def __init__(self) -> None:
        self.subscribed = threading.Event()
        self._cond = threading.Condition()
        self._oom: collections.OrderedDict[str, int] = collections.OrderedDict()
        self._died: collections.OrderedDict[str, tuple[int, int]] = collections.OrderedDict()
        thread = threading.Thread(target=self._listen, name="boxgym-oom-events", daemon=True)
        thread.start()

    def _listen(self) -> None:
        filters = {"type": "container", "event": ["oom", "die"], "label": [_owner()]}
        while True:
            try:
                stream = client().events(decode=True, filters=filters)
                self.subscribed.set()
                for event in stream:
                    self._record(event)
            except Exception:  # noqa: BLE001 - the engine restarted or dropped us: again
                self.subscribed.clear()
                time.sleep(1.0)

    def _record(self, event: dict[str, Any]) -> None:
        actor = event.get("Actor") or {}
        container = str(actor.get("ID") or event.get("id") or "")
        when = int(event.get("timeNano") or 0)
        action = event.get("Action") or event.get("status")
        with self._cond:
            if action == "oom":
                _keep(self._oom, container, when)
            elif action == "die":
                code = str((actor.get("Attributes") or {}).get("exitCode", ""))
                _keep(self._died, container, (int(code) if code.isdigit() else -1, when))
            self._cond.notify_all()

    def memory_killed(self, container: str, wait: float) -> bool:
        """Whether ``container`` ended by SIGKILL soon after its memory limit killed in it."""
        with self._cond:
            self._cond.wait_for(lambda: container in self._died, timeout=wait)
            died, oom = self._died.get(container), self._oom.get(container)
        if died is None or oom is None:
            return False
        code, when = died
        return code == 137 and 0 <= when - oom <= _NEAR_NS


def _keep(kept: collections.OrderedDict[str, Any], key: str, value: Any) -> None:
    kept[key] = value
    kept.move_to_end(key)
    while len(kept) > _KEPT:
        kept.popitem(last=False)


def _owner() -> str:
    return f"{LABEL_OWNER}={owner_label()}"


_lock = threading.Lock()
_listener: _Listener | None = None


def _forget() -> None:
    """In a forked child: the parent's listener thread is not there; start anew."""
    global _listener, _lock
    _listener, _lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget)


def watch() -> None:
    """Listen to the engine's events from now on (once per process; waits to subscribe).

    Called before a keeper container starts: a kill is only seen if the stream was open.
    """
    global _listener
    with _lock:
        if _listener is None:
            _listener = _Listener()
        listener = _listener
    listener.subscribed.wait(_SUBSCRIBE_S)


def memory_killed(container: str, wait: float = 5.0) -> bool:
    """Whether the container's main process was killed at its memory limit.

    Waits up to ``wait`` seconds for the engine's report of its end. False when unknown
    (no listener, no report): the caller then keeps its own reading.
    """
    listener = _listener
    return listener is not None and listener.memory_killed(container, wait)
