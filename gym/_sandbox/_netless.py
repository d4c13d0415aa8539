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
which ``localhost`` does not resolve, so boxgym bind-mounts a read-only hosts file of its
own with the same lines Docker writes for a network-less container.

That needs the engine to see this process's files, which a remote engine does not. The
first container created with the mount tells: where the engine refuses it and creates
the same container without it, containers get the engine's network sandbox from then on,
as before (`created`, `refused`).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from docker.types import Mount

from gym._paths import data_dir

__all__ = ["HOSTS", "created", "netless", "refused"]

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
_usable: dict[str, bool] = {}  # data folder -> whether the engine mounts its hosts file


def netless(args: dict[str, Any]) -> dict[str, Any]:
    """``args`` for a container with no network, without the engine's network sandbox.

    Unchanged for a container that has a network, runs under gVisor (which brings its
    own network stack), or where the engine could not mount this process's hosts file.
    """
    if args.get("network_mode") != "none" or args.get("runtime") == "runsc":
        return args
    folder = data_dir()
    with _lock:
        if _usable.get(str(folder)) is False:
            return args
        path = _write_hosts(folder, check=str(folder) not in _usable)
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


def _write_hosts(folder: Path, check: bool) -> Path:
    path = folder / "etc-hosts"
    if not path.exists() or (check and path.read_text() != HOSTS):
        tmp = folder / f".etc-hosts.{os.getpid()}"
        tmp.write_text(HOSTS)
        tmp.chmod(0o644)
        tmp.replace(path)
    return path
