"""The connection to the Docker engine, container labels and the reaper of orphans."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import NamedTuple

import docker
import docker.errors
import requests.exceptions

from gym._core._errors import EngineUnavailable, SandboxError, SandboxUnavailable

__all__ = [
    "HOW_TO_START",
    "LABEL_EPISODE",
    "ContainerInfo",
    "list_boxgym",
    "LABEL_OWNER",
    "LABEL_ROLE",
    "LABEL_RUN",
    "client",
    "connected",
    "disconnect",
    "docker_errors",
    "labels",
    "owner_alive",
    "owner_label",
    "pending_removals",
    "reap",
    "remove_container",
]

LABEL_RUN = "boxgym.run"
LABEL_EPISODE = "boxgym.episode"
LABEL_OWNER = "boxgym.owner"
LABEL_ROLE = "boxgym.role"

HOW_TO_START = (  # what an EngineUnavailable ends with, and `gym doctor`'s fix
    "start it with `sudo scripts/engine.sh` (installs Debian's docker.io if needed and runs "
    "dockerd in the background), or point DOCKER_HOST at a running engine"
)
_lock = threading.Lock()
_client: docker.DockerClient | None = None
reaped_at_start: list[str] = []
"""Containers of dead owners removed when this process connected."""


def disconnect() -> None:
    """Close the process-wide client (its pooled HTTP connections)."""
    global _client
    with _lock:
        if _client is not None:
            with contextlib.suppress(Exception):
                _client.close()
            _client = None


def connected() -> bool:
    """Whether this process has connected to the engine (and may own containers)."""
    return _client is not None


def client() -> docker.DockerClient:
    """Return the process-wide Docker client, connecting (and reaping orphans) once.

    Raises:
        EngineUnavailable: the engine does not answer; the message says how to start it.
    """
    global _client
    with _lock:
        if _client is None:
            _client = _connect()
            reaped_at_start.extend(reap(_client))
        return _client


def _connect() -> docker.DockerClient:
    try:
        c = docker.from_env(timeout=120)
        if c.api.base_url.startswith("http+docker://"):  # a unix socket: no proxy applies
            c.api.trust_env = False  # (requests would read the proxy variables per call)
        c.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        raise EngineUnavailable(f"no Docker engine answers at {where}: {HOW_TO_START}") from exc
    return c


@contextlib.contextmanager
def docker_errors(container_id: str | None = None) -> Iterator[None]:
    """Map Docker SDK and connection errors into the boxgym tree."""
    try:
        yield
    except docker.errors.NotFound as exc:
        raise SandboxUnavailable(
            f"container {container_id or '?'} is gone (removed or died): {exc.explanation}"
        ) from exc
    except docker.errors.APIError as exc:
        if container_id and exc.status_code == 409:
            raise SandboxUnavailable(
                f"container {container_id} is not running: {exc.explanation}"
            ) from exc
        raise SandboxError(f"Docker engine error: {exc.explanation or exc}") from exc
    except (requests.exceptions.ConnectionError, ConnectionError) as exc:
        raise EngineUnavailable(f"lost the Docker engine: {exc}; {HOW_TO_START}") from exc


_pending: set[str] = set()
_pending_lock = threading.Lock()
_retrying = threading.Event()


def remove_container(container_id: str) -> None:
    """Force-remove a container; while the engine cannot be reached, keep trying.

    A container whose removal meets no engine (a daemon restarting) is retried in the
    background, backing off up to 30 s, until it is gone: no container outlives an
    engine restart because its removal came at the wrong moment.
    """
    if _try_remove(container_id):
        return
    with _pending_lock:
        _pending.add(container_id)
        if _retrying.is_set():
            return
        _retrying.set()
    threading.Thread(target=_retry_removals, name="gym-remove-retry", daemon=True).start()


def pending_removals() -> list[str]:
    """Containers whose removal waits for the engine to answer again."""
    with _pending_lock:
        return sorted(_pending)


def _try_remove(container_id: str) -> bool:
    """Remove a container now: True when it is gone, False when the engine is away."""
    try:
        client().api.remove_container(container_id, force=True)
    except (docker.errors.NotFound, docker.errors.APIError):
        pass  # gone already, or being removed
    except (requests.exceptions.ConnectionError, ConnectionError, EngineUnavailable):
        return False
    return True


def _retry_removals() -> None:
    delay = 1.0
    while True:
        time.sleep(delay)
        delay = min(30.0, delay * 2)
        with _pending_lock:
            waiting = sorted(_pending)
        done = {c for c in waiting if _try_remove(c)}
        with _pending_lock:
            _pending.difference_update(done)
            if not _pending:
                _retrying.clear()
                return


def _start_time(pid: int) -> str:
    """The kernel start time of a process (field 22 of /proc/PID/stat), or '' if gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            stat = fh.read()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def labels(run: str, episode: str, role: str) -> dict[str, str]:
    """The labels of a container boxgym creates (the reaper finds it by its owner)."""
    return {
        LABEL_RUN: run,
        LABEL_EPISODE: episode,
        LABEL_OWNER: owner_label(),
        LABEL_ROLE: role,
    }


def owner_label() -> str:
    """The owner label of this process: ``host:pid:start-time``."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_time(pid)}"


def owner_alive(owner: str) -> bool | None:
    """Whether the process named by an owner label still runs (None: another host)."""
    try:
        host, pid, started = owner.rsplit(":", 2)
    except ValueError:
        return False
    if host != socket.gethostname():
        return None
    return _start_time(int(pid)) == started and started != ""


def reap(
    c: docker.DockerClient | None = None, *, everything: bool = False, own: bool = False
) -> list[str]:
    """Remove boxgym containers whose owning process is gone.

    Args:
        c: the client to use; the process-wide one by default.
        everything: remove every boxgym container, owners alive or not.
        own: remove this process's containers too (used when it exits).

    Returns:
        The ids of the removed containers.
    """
    c = c or client()
    removed: list[str] = []
    me = owner_label()
    for container in list_boxgym(c):
        owner = container.labels.get(LABEL_OWNER, "")
        if everything or (own and owner == me) or owner_alive(owner) is False:
            with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
                c.api.remove_container(container.id, force=True)
                removed.append(container.id)
    return removed


class ContainerInfo(NamedTuple):
    """A boxgym container as listed by the engine (one API call, no per-container fetch)."""

    id: str
    labels: dict[str, str]
    state: str


def list_boxgym(c: docker.DockerClient | None = None) -> list[ContainerInfo]:
    """Every container carrying boxgym's owner label, running or not."""
    c = c or client()
    with docker_errors():
        rows = c.api.containers(all=True, filters={"label": LABEL_OWNER})
    return [ContainerInfo(r["Id"], r.get("Labels") or {}, r.get("State", "")) for r in rows]
