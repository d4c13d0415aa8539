"""Network-less containers without the engine's network sandbox.

For ``network_mode: none`` Docker still builds a network sandbox per container
(libnetwork): it creates and bind-mounts a network namespace, writes ``/etc/hosts`` and
``resolv.conf``, and has runc run a prestart hook that executes the whole dockerd binary
again (``libnetwork-setkey``). That is about half of what a bare lifecycle of boxgym's
hardened image costs the machine (docs/scale.md has the figures).

A container created with ``NetworkDisabled`` skips all of it: runc creates the new
network namespace itself, with only ``lo`` (up), as it does for any namespace the
engine did not provide. The isolation is the same: each container has a network
namespace of its own, new, which no other container ever joins (``docker inspect``
still shows ``NetworkMode: none``). What it loses is Docker's ``/etc/hosts``, without
which ``localhost`` does not resolve, so boxgym bind-mounts a read-only hosts file with
the same lines Docker writes for a network-less container. Each container gets a file of
its own, unlinked on the host once the container has started (its mount keeps it): one
file shared by all would be one inode that every container can lock (``flock`` needs
only a file open for reading), a channel between containers that run at the same time,
such as a grading worker holding hidden inputs and another episode's agent.

That needs the engine to see this process's files, which a remote engine does not. The
first container created with the mount tells: where the engine refuses it and creates
the same container without it, containers get the engine's network sandbox from then on,
as before (`created`, `refused`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
import time
from pathlib import Path
from typing import Any

from docker.types import Mount

from gym._core._paths import data_dir

__all__ = ["HOSTS", "created", "netless", "refused", "release"]

HOSTS = (
    "127.0.0.1\tlocalhost\n"
    "::1\tlocalhost ip6-localhost ip6-loopback\n"
    "fe00::0\tip6-localnet\n"
    "ff00::0\tip6-mcastprefix\n"
    "ff02::1\tip6-allnodes\n"
    "ff02::2\tip6-allrouters\n"
)
"""What Docker writes into ``/etc/hosts`` for a container with no network."""

_lock = threading.Lock()
_usable: dict[str, bool] = {}  # data folder -> whether the engine mounts its hosts files
_swept: set[str] = set()  # data folders whose leftover hosts files this process removed
ORPHAN_S = 600
"""Age after which a hosts file is a leftover (its creator died between create and start)."""


def netless(args: dict[str, Any]) -> dict[str, Any]:
    """``args`` for a container with no network, without the engine's network sandbox.

    Unchanged for a container that has a network, runs under gVisor (which brings its
    own network stack), or where the engine could not mount this process's hosts file.
    Otherwise the container's own hosts file is written: `release` it once the container
    has started (or could not be created or started).
    """
    if args.get("network_mode") != "none" or args.get("runtime") == "runsc":
        return args
    folder = data_dir()
    with _lock:
        if _usable.get(str(folder)) is False:
            return args
        first = str(folder) not in _swept
        _swept.add(str(folder))
    path = _new_hosts(folder / "hosts", sweep=first)
    mount = Mount(target="/etc/hosts", source=str(path), type="bind", read_only=True)
    return {**args, "network_disabled": True, "mounts": [*(args.get("mounts") or []), mount]}


def created(args: dict[str, Any]) -> None:
    """A container was created from ``netless`` arguments: the engine mounts the file."""
    if args.get("network_disabled"):
        with _lock:
            _usable.setdefault(str(data_dir()), True)


def refused() -> None:
    """The engine refused ``netless`` arguments and took the same container without."""
    with _lock:
        _usable[str(data_dir())] = False


def release(args: dict[str, Any]) -> None:
    """Unlink the hosts file of a container made from ``netless`` arguments, if any."""
    if args.get("network_disabled"):
        for mount in args.get("mounts") or []:
            if mount.get("Target") == "/etc/hosts":
                Path(mount["Source"]).unlink(missing_ok=True)


def _new_hosts(folder: Path, *, sweep: bool) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if sweep:
        for old in folder.iterdir():
            with contextlib.suppress(OSError):
                if time.time() - old.stat().st_mtime > ORPHAN_S:
                    old.unlink()
    path = folder / secrets.token_hex(8)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "w") as fh:
        fh.write(HOSTS)
    os.chmod(path, 0o644)  # whatever the umask
    return path
