"""Warm pools of ready sandboxes, refilled in the background, and background removal."""

from __future__ import annotations

import atexit
import collections
import contextlib
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from gym._errors import GymError
from gym._sandbox._base import Sandbox
from gym._sandbox._config import SandboxConfig
from gym._sandbox._docker import DockerSandbox
from gym._sandbox._engine import connected, disconnect, reap, remove_container

__all__ = [
    "SandboxPool",
    "discard",
    "pool_for",
    "remove_container_later",
    "set_pool_size",
    "shutdown_pools",
]

log = logging.getLogger("gym.sandbox")

_DEFAULT_SIZE = int(os.environ.get("GYM_POOL_SIZE", "1"))
_pools: dict[str, SandboxPool] = {}
_pools_lock = threading.Lock()
_size = _DEFAULT_SIZE
_remover = ThreadPoolExecutor(max_workers=4, thread_name_prefix="gym-remove")


class SandboxPool:
    """Keeps ``size`` started sandboxes (container and shell up) ready for one config.

    `acquire` hands out a ready sandbox at once, or creates one when the pool is empty;
    a background thread refills the pool. Sandboxes are never returned to a pool: a used
    one is removed (`discard`), and the next episode gets a fresh container.
    """

    def __init__(self, config: SandboxConfig, size: int = 1, *, run: str = "pool") -> None:
        self.config = config
        self.size = size
        self.run = run
        self._ready: collections.deque[DockerSandbox] = collections.deque()
        self._cond = threading.Condition()
        self._stopped = False
        self._failures = 0
        self._thread = threading.Thread(target=self._fill, name="gym-pool", daemon=True)
        self._thread.start()

    def acquire(self) -> DockerSandbox:
        """Take a ready sandbox, or create one now if none is ready."""
        with self._cond:
            while self._ready:
                sandbox = self._ready.popleft()
                self._cond.notify_all()
                if sandbox.shell.alive:
                    return sandbox
                discard(sandbox)
            self._cond.notify_all()
        return _prepare(DockerSandbox.create(self.config, run=self.run, role="agent"))

    def resize(self, size: int) -> None:
        """Change the number of sandboxes kept ready."""
        with self._cond:
            self.size = size
            while len(self._ready) > size:
                discard(self._ready.pop())
            self._cond.notify_all()

    def close(self) -> None:
        """Stop refilling and remove every ready sandbox."""
        with self._cond:
            self._stopped = True
            ready, self._ready = list(self._ready), collections.deque()
            self._cond.notify_all()
        for sandbox in ready:
            sandbox.close()

    def _fill(self) -> None:
        while True:
            with self._cond:
                while not self._stopped and len(self._ready) >= self.size:
                    self._cond.wait()
                if self._stopped:
                    return
            try:
                sandbox = _prepare(DockerSandbox.create(self.config, run=self.run, role="agent"))
                self._failures = 0
            except GymError as exc:
                self._failures += 1
                if self._stopped:
                    return
                log.warning("warm pool could not start a sandbox: %s", exc)
                with self._cond:
                    self._cond.wait(timeout=min(30.0, 0.5 * 2**self._failures))
                continue
            with self._cond:
                surplus = self._stopped or len(self._ready) >= self.size  # resized meanwhile
                if not surplus:
                    self._ready.append(sandbox)
            if surplus:
                discard(sandbox)
                if self._stopped:
                    return


def _prepare(sandbox: DockerSandbox) -> DockerSandbox:
    try:
        sandbox.shell.start()
        sandbox.run("true", timeout=30)
    except BaseException:
        sandbox.close()
        raise
    return sandbox


def pool_for(config: SandboxConfig) -> SandboxPool:
    """The process-wide warm pool for a config, created on first use."""
    with _pools_lock:
        pool = _pools.get(config.key)
        if pool is None:
            pool = _pools[config.key] = SandboxPool(config, _size)
        return pool


def set_pool_size(size: int) -> None:
    """Set how many ready sandboxes each pool keeps (for example the run's concurrency)."""
    global _size
    with _pools_lock:
        _size = size
        pools = list(_pools.values())
    for pool in pools:
        pool.resize(size)


def discard(sandbox: Sandbox) -> None:
    """Remove a sandbox in the background so that the caller does not wait."""
    _later(sandbox.close)


def remove_container_later(container_id: str) -> None:
    """Remove a container (by id) in the background; at once if shutting down."""
    _later(lambda: remove_container(container_id))


def _later(removal: Callable[[], None]) -> None:
    try:
        _remover.submit(removal)
    except RuntimeError:  # the process is shutting down: remove it now
        removal()


def shutdown_pools() -> None:
    """Remove every pooled sandbox and wait for background removals to finish."""
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        with contextlib.suppress(Exception):
            pool.close()
    _remover.shutdown(wait=True)
    if connected():
        with contextlib.suppress(Exception):
            reap(own=True)
        disconnect()


atexit.register(shutdown_pools)
