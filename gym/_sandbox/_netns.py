"""Network namespaces reused one container at a time: the engine's costliest part, paid once.

A container started with ``network_mode: none`` still gets a network namespace of its
own (only ``lo``), and making and tearing one down costs the machine more CPU than the
rest of the container's life: 0.29 against 0.17-0.19 CPU-s per bare lifecycle on a
2-core machine (bench/scale.py, engine floor). So a sandbox is instead started in the
namespace of a *holder*: a tiny hardened container of its own (a shell loop, linked to
this process like every container here) whose namespace has only ``lo`` and that nothing
but its lessee ever joins.

The isolation argument, one lessee at a time:

- A holder is leased to one container at a time. It comes back only when the engine
  reports that container destroyed (its ``destroy`` event): every process of it is dead,
  so no socket it opened, bound or listened on (TCP on ``lo``, abstract Unix sockets)
  outlives it, and no later lessee can reach anything it left.
- What else of a namespace a process could change needs ``CAP_NET_ADMIN`` there
  (addresses, routes, sysctls, firewall), and every container drops all capabilities.
- A joined container sees the holder's ``/etc/hosts``, ``/etc/resolv.conf`` and
  ``/etc/hostname``; the engine mounts them read-only only in a container with a
  read-only root, so only those are leased a holder. A writable one (or one under
  another runtime, such as gVisor) gets a namespace of its own, as before.
- Two live containers never share a namespace: concurrent sandboxes hold different holders.
- Connections a lessee made outlive it in TIME_WAIT (a minute on ``lo``), and would make
  a later bind of the same port fail: a holder is leased again only when its namespace
  has no TCP socket left (it answers that itself; see `Holder.sockets`).

When anything is unsure (the engine's event stream broke, a holder died, a create
failed) the holder is let go rather than reused, and the container gets a namespace of
its own.

Reuse is opt-in (``BOXGYM_REUSE_NETNS=1``): a holder costs a full lifecycle with its
own namespace, and pays back after about three leases. Measured on 2 cores (command
and figures in docs/scale.md): +13-15% episodes/s over 64-episode runs at c=4, but
at 16 episodes and c=8 thirteen holders were made for 32 containers and throughput
fell to 0.83-0.87x of the best concurrency.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

import docker

from gym._sandbox._engine import LABEL_OWNER, labels, owner_label
from gym._sandbox._stream import STDOUT, ExecSocket, FrameReader

__all__ = ["MAX_IDLE", "Holder", "NetnsHolders"]

_CHECKS = 3
"""Idle holders asked for a quiet namespace per lease before a new one is started."""
MAX_IDLE = 64
"""The most holders kept waiting by default; one returned beyond that is let go."""

HOLDER_SCRIPT = (
    "while read -r _; do n=0; for f in /proc/net/sockstat /proc/net/sockstat6; do "
    '[ -r "$f" ] || continue; while read -r p _ a _ _ _ b _; do case "$p" in '
    'TCP:) n=$((n+a+b)) ;; TCP6:) n=$((n+a)) ;; esac; done < "$f"; '
    'done; echo "$n"; done'
)
"""A holder's main process: shell builtins only (no fork per question).

It sums the namespace's own counters in ``/proc/net/sockstat{,6}``: TCP sockets in use
(listening, connected or closing) and in TIME_WAIT. Reading them costs the same whatever
the machine's TCP load; counting the lines of ``/proc/net/tcp`` walked the whole hash
table of the host, and cost 3% of a busy machine's CPU."""
_HARMLESS_CAPS = {"SETUID", "SETGID"}
"""Capabilities a lessee may have: none of them touches a network namespace."""


class Holder:
    """A running holder container and its link (see `_link`), which it also answers on.

    Its main process (`HOLDER_SCRIPT`) answers each line it reads with the number of TCP
    sockets left in its namespace, and ends at end of input, like every linked container.
    """

    def __init__(self, container_id: str, sock: ExecSocket) -> None:
        self.id = container_id
        self._sock = sock
        self._reader = FrameReader(sock)

    @property
    def mode(self) -> str:
        """The ``network_mode`` that joins this holder's namespace."""
        return f"container:{self.id}"

    def sockets(self, timeout: float = 5.0) -> int | None:
        """TCP sockets left in the namespace (None: the holder did not answer).

        A lessee's connections outlive it for up to a minute in TIME_WAIT, and one on a
        port the next lessee binds without ``SO_REUSEADDR`` would make its bind fail: a
        namespace is leased again only when none are left.
        """
        try:
            self._sock.sendall(b"?\n")
            line = b""
            deadline = time.monotonic() + timeout
            while not line.endswith(b"\n"):
                frames = self._reader.frames(deadline)
                if self._reader.eof:
                    return None
                line += b"".join(data for kind, data in frames if kind == STDOUT)
            return int(line)
        except (OSError, ValueError):
            return None

    def let_go(self) -> None:
        """Close the link: the holder ends and the engine removes it."""
        self._sock.close()


StartHolder = Callable[[dict[str, Any], bool], Holder]


class NetnsHolders:
    """The holders of this process: idle ones, and the one each live container uses.

    Args:
        start: starts a holder container from ``create_kwargs``-style arguments and
            whether an episode waits for it.
    """

    def __init__(self, start: StartHolder) -> None:
        self._start = start
        self._lock = threading.Lock()
        self._idle: list[Holder] = []
        self._leased: dict[str, Holder] = {}  # container id -> its holder
        self._stream: Any = None  # the engine's destroy events, while they are read
        self._pid = os.getpid()
        self._keep = MAX_IDLE
        self.made = 0

    def eligible(self, kwargs: dict[str, Any]) -> bool:
        """Whether a container with these arguments may join a holder's namespace."""
        if os.environ.get("BOXGYM_REUSE_NETNS", "0") != "1":
            return False  # opt-in: it pays only over runs of more than a few dozen episodes
        return (
            kwargs.get("network_mode") == "none"
            and kwargs.get("read_only") is True
            and not kwargs.get("runtime")
            and "ALL" in (kwargs.get("cap_drop") or [])
            and set(kwargs.get("cap_add") or ()) <= _HARMLESS_CAPS
            and not kwargs.get("privileged")
        )

    def lease(self, kwargs: dict[str, Any], *, urgent: bool = True) -> Holder | None:
        """A holder for a container about to be created, or None (it gets its own namespace).

        Call `bind` once the container exists, or `discard` if its creation failed.
        Starting a new holder goes through the engine gate with the caller's urgency, so
        call this outside the gate.
        """
        if not self.eligible(kwargs):
            return None
        self._after_fork()
        if not self._watch():
            return None
        with self._lock:
            asked, self._idle = self._idle[:_CHECKS], self._idle[_CHECKS:]  # longest back first
        found, busy = None, []
        for holder in asked:
            left = holder.sockets() if found is None else 0
            if left is None:
                holder.let_go()
            elif left == 0 and found is None:
                found = holder
            else:
                busy.append(holder)  # asked again later, after its sockets time out
        with self._lock:
            self._idle = busy + self._idle if found is not None else self._idle + busy
        if found is not None:
            return found
        try:
            holder = self._start(_holder_kwargs(kwargs["image"]), urgent)
        except Exception:  # no holder: the container gets a namespace of its own
            return None
        with self._lock:
            self.made += 1
        return holder

    def bind(self, holder: Holder, container_id: str) -> None:
        """Record that a created container uses a holder (until it is destroyed)."""
        with self._lock:
            if self._stream is not None:
                self._leased[container_id] = holder
                return
        holder.let_go()  # the stream broke meanwhile: its return would go unseen

    def discard(self, holder: Holder) -> None:
        """Never reuse a holder (its lessee failed to start, or it is unsure)."""
        with self._lock:
            self._idle = [h for h in self._idle if h is not holder]
            for container_id in [c for c, h in self._leased.items() if h is holder]:
                del self._leased[container_id]
        holder.let_go()

    def close(self) -> None:
        """Let every holder go (this process is ending); a stream's reader goes on, ignored."""
        self._forget(self._stream)

    def keep(self, most: int) -> None:
        """Keep at most ``most`` idle holders (0: none; a warm-pool size of 0 means that)."""
        with self._lock:
            self._keep = most
            extra, self._idle = self._idle[most:], self._idle[:most]
        for holder in extra:
            holder.let_go()

    def counts(self) -> dict[str, int]:
        """Holders made, idle and leased (for tests and reports)."""
        with self._lock:
            return {"made": self.made, "idle": len(self._idle), "leased": len(self._leased)}

    def _returned(self, container_id: str) -> None:
        """A container of ours was destroyed: a lessee (its holder is free) or a holder."""
        with self._lock:
            holder = self._leased.pop(container_id, None)
            if holder is not None and len(self._idle) < self._keep:
                self._idle.append(holder)
                return
            done = [holder] if holder is not None else []
            done += [h for h in self._idle if h.id == container_id]  # a holder died
            self._idle = [h for h in self._idle if h.id != container_id]
        for gone in done:
            gone.let_go()

    def _after_fork(self) -> None:
        if self._pid != os.getpid():  # a forked child: the parent's holders are not its own
            self._lock = threading.Lock()
            self._idle, self._leased, self._stream = [], {}, None
            self._pid = os.getpid()

    def _watch(self) -> bool:
        """Make sure the engine's destroy events for our containers are being read."""
        with self._lock:
            if self._stream is not None:
                return True
            try:
                # a client of its own: the stream blocks for as long as nothing is destroyed
                engine = docker.from_env(timeout=None)
                filters = {"type": "container", "event": "destroy", "label": [_owner()]}
                self._stream = engine.api.events(decode=True, filters=filters)
            except Exception:
                return False
        threading.Thread(
            target=self._read, args=(self._stream,), name="gym-netns", daemon=True
        ).start()
        return True

    def _read(self, stream: Any) -> None:
        try:
            for event in stream:
                if self._stream is not stream:
                    break  # closed: a newer stream (if any) sees the events
                self._returned(str(event.get("id") or event.get("Actor", {}).get("ID", "")))
        except Exception:
            pass
        self._forget(stream)

    def _forget(self, stream: Any) -> None:
        """Let every holder go: ``stream`` broke (engine restart), or we close.

        What is leased could no longer be seen coming back.
        """
        with self._lock:
            if self._stream is not stream:
                return  # an older stream: its holders went with it
            lost = [*self._leased.values(), *self._idle]
            self._leased.clear()
            self._idle.clear()
            self._stream = None
        for holder in lost:
            holder.let_go()


def _owner() -> str:
    return f"{LABEL_OWNER}={owner_label()}"


def _holder_kwargs(image: str) -> dict[str, Any]:
    """A holder: the lessee's image (it has ``sh``), every hardening, almost no resources."""
    return {
        "image": image,
        "command": ["sh", "-c", HOLDER_SCRIPT],
        "user": "65534:65534",
        "init": True,
        "network_mode": "none",
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "pids_limit": 8,
        "mem_limit": "32m",
        "memswap_limit": "32m",
        "nano_cpus": 100_000_000,
        "read_only": True,
        "labels": labels("pool", "netns", "netns"),
        "stop_signal": "SIGKILL",
        "ipc_mode": "private",
        "cgroupns": "private",
        "privileged": False,
    }
