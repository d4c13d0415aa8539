"""Network-less containers without the engine's network sandbox.

For ``network_mode: none`` Docker still builds a network sandbox per container
(libnetwork): it creates and bind-mounts a network namespace, writes ``/etc/hosts`` and
``resolv.conf``, and has runc run a prestart hook that executes the whole dockerd binary
again (``libnetwork-setkey``). That is most of a container's cost to the engine: a bare
lifecycle of boxgym's hardened image costs the machine 0.33 CPU-s with it and 0.18
without it (2 cores; see docs/scale.md).

A container created with ``NetworkDisabled`` skips all of it: runc creates the new
network namespace itself, with only ``lo`` (up), as it does for any namespace the
engine did not provide. The isolation is the same: each container has a network
namespace of its own, new, which no other container ever joins (``docker inspect``
still shows ``NetworkMode: none``). What it loses is Docker's ``/etc/hosts``, without
which ``localhost`` does not resolve, so boxgym bind-mounts a read-only hosts file of its
own with the same lines Docker writes for a network-less container.

That needs the engine to see this process's files, which a remote engine does not; it is
checked once per process, by creating (never starting) a container with that mount. Where
the check fails, containers get the engine's network sandbox, as before.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import docker.errors
import requests.exceptions
from docker.models.containers import _create_container_args
from docker.types import Mount

from gym._paths import data_dir
from gym._sandbox._engine import client, labels

__all__ = ["HOSTS", "netless"]

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
_mounts: dict[str, Mount | None] = {}  # data folder -> the hosts mount, None: unusable


def netless(args: dict[str, Any]) -> dict[str, Any]:
    """``args`` for a container with no network, without the engine's network sandbox.

    Unchanged for a container that has a network, runs under gVisor (which brings its
    own network stack), or where the engine cannot mount this process's hosts file.
    """
    if args.get("network_mode") != "none" or args.get("runtime") == "runsc":
        return args
    mount = _hosts_mount(str(args["image"]))
    if mount is None:
        return args
    return {**args, "network_disabled": True, "mounts": [*(args.get("mounts") or []), mount]}


def _hosts_mount(image: str) -> Mount | None:
    folder = data_dir()
    with _lock:
        known = str(folder) in _mounts
        path = _write_hosts(folder, check=not known)  # written again if someone removed it
        if known:
            return _mounts[str(folder)]
        mount = Mount(target="/etc/hosts", source=str(path), type="bind", read_only=True)
        usable = _engine_mounts(image, mount)
        if usable is not None:  # None: the check itself could not run; ask again next time
            _mounts[str(folder)] = mount if usable else None
        return mount if usable else None


def _write_hosts(folder: Path, check: bool) -> Path:
    path = folder / "etc-hosts"
    if not path.exists() or (check and path.read_text() != HOSTS):
        tmp = folder / f".etc-hosts.{os.getpid()}"
        tmp.write_text(HOSTS)
        tmp.chmod(0o644)
        tmp.replace(path)
    return path


def _engine_mounts(image: str, mount: Mount) -> bool | None:
    """Whether the engine can bind-mount ``mount`` (None: no answer about it)."""
    engine = client()
    args = {
        "image": image,
        "command": ["true"],
        "mounts": [mount],
        "network_disabled": True,
        "labels": labels("probe", "probe", "probe"),  # the reaper's, should this process die
    }
    try:
        created = engine.api.create_container(
            **_create_container_args({**args, "version": engine.api._version})
        )
    except docker.errors.ImageNotFound:
        return None
    except docker.errors.APIError:
        return False  # "bind source path does not exist": the engine is elsewhere
    except requests.exceptions.RequestException:
        return None
    try:
        engine.api.remove_container(created["Id"], force=True)
    except (docker.errors.DockerException, requests.exceptions.RequestException):
        pass
    return True
