"""`LazySandbox`: a sandbox whose container starts when its first command needs one.

An episode's sandbox is handed out at reset, but many episodes never need a container
for long, and some never at all (a policy that submits at once). A lazy sandbox holds
the files the environment's `setup` writes and the baseline it sets, and takes a
container (from the warm pool, started ahead while the policy was thinking) only when a
command, a read or a listing needs one; the held writes are then replayed through the
fresh container's shell. Ending an episode that never started one (`final_diff`, then
`close`) touches no container at all: nothing ran, so nothing changed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from gym._core._errors import SandboxError, SandboxUnavailable
from gym._sandbox._base import Sandbox
from gym._sandbox._config import SandboxConfig
from gym._sandbox._docker import DockerSandbox
from gym._sandbox._manifest import Change, Manifest
from gym._sandbox._stream import ExecResult
from gym._sandbox._tar import Entry

__all__ = ["LazySandbox"]


class _Write(NamedTuple):
    root: str
    files: dict[str, bytes]
    mode: int
    user: str | None


class LazySandbox(Sandbox):
    """A sandbox that starts its container on first use (see the module docstring).

    Args:
        config: the settings of the container it will start.
        start: gives a started sandbox for ``config`` (a warm pool's `acquire`, which also
            tells the demand that this episode now has its container).
        release: gives the started sandbox back when this one closes.
        on_close: called once with whether a container was ever started.
    """

    def __init__(
        self,
        config: SandboxConfig,
        *,
        start: Callable[[], Sandbox],
        release: Callable[[Sandbox], None],
        on_close: Callable[[bool], None] = lambda started: None,
    ) -> None:
        self._config = config
        self._start, self._release = start, release
        self._on_close = on_close
        self._inner: Sandbox | None = None
        self._writes: list[_Write] = []
        self._baseline = Manifest()
        self._closed = False
        self._lock = threading.Lock()

    @property
    def id(self) -> str:  # type: ignore[override]
        """The started sandbox's id, or ``lazy`` before it starts."""
        return self._inner.id if self._inner is not None else "lazy"

    @property
    def config(self) -> SandboxConfig:  # type: ignore[override]
        """Its settings: the started sandbox's (`SandboxConfig.drawn`), or the template's."""
        return self._inner.config if self._inner is not None else self._config

    @property
    def started(self) -> bool:
        """Whether a container was started for it."""
        return self._inner is not None

    @property
    def baseline(self) -> Manifest:
        """The manifest the episode began with (kept by the started sandbox once there)."""
        return self._inner.baseline if self._inner is not None else self._baseline

    @baseline.setter
    def baseline(self, value: Manifest) -> None:
        self._baseline = value
        if self._inner is not None:
            self._inner.baseline = value

    def inner(self) -> Sandbox:
        """The started sandbox, starting it (and replaying held writes) on first call.

        Raises:
            SandboxUnavailable: the sandbox was closed, or no container could start.
        """
        with self._lock:
            if self._closed:
                raise SandboxUnavailable("sandbox was closed")
            if self._inner is None:
                self._inner = self._materialise()
            return self._inner

    def _materialise(self) -> Sandbox:
        box = self._start()
        try:
            for write in self._writes:  # the shell is still the harness's own: the fast path
                via_shell = write.user is None
                box.put_files(
                    write.root, write.files, mode=write.mode, via_shell=via_shell, user=write.user
                )
        except BaseException:
            self._release(box)
            raise
        box.baseline = self._baseline
        self._writes.clear()
        return box

    # -- what may happen without a container -----------------------------------------

    @property
    def closed(self) -> bool:
        """Whether `close` was called."""
        return self._closed

    def close(self) -> None:
        """Give the container back (if one was started); safe to call more than once."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            inner, self._inner = self._inner, None
        if inner is not None:
            self._release(inner)
        self._on_close(inner is not None)

    def ensure_running(self) -> None:
        """Raise `SandboxUnavailable` if closed, or if the started container died."""
        if self._closed:
            raise SandboxUnavailable("sandbox was closed")
        if self._inner is not None:
            self._inner.ensure_running()

    def kill_processes(self, user: str | None = None) -> None:
        """Kill the agent's processes (none can run before the container starts)."""
        if self._inner is not None:
            self._inner.kill_processes(user)

    def put_files(
        self,
        root: str,
        files: dict[str, bytes],
        *,
        mode: int = 0o644,
        timeout: float = 60.0,
        via_shell: bool = False,
        user: str | None = None,
    ) -> None:
        """Write files; held until the container starts if it has not yet."""
        with self._lock:
            if self._inner is None and not self._closed:
                self._writes.append(_Write(root, dict(files), mode, user))
                return
        self.inner().put_files(
            root, files, mode=mode, timeout=timeout, via_shell=via_shell, user=user
        )

    def snapshot(self, roots: Sequence[str] | None = None) -> Manifest:
        """The manifest of the writable mounts (what the held writes make, before a start)."""
        if self._inner is not None:
            return self._inner.snapshot(roots)
        wanted = tuple(roots or self._config.tmpfs)
        manifest = Manifest()
        for write in self._writes:
            if write.root.startswith(wanted):
                manifest = manifest.merged(Manifest.of_files(write.root, write.files))
        return manifest

    def diff(self) -> list[Change]:
        """Changes since the baseline."""
        if self._inner is not None:
            return self._inner.diff()
        return self._baseline.diff(self.snapshot())

    def final_diff(self) -> list[Change]:
        """Kill the agent's processes and read the changes (nothing to do if never started)."""
        if self._inner is not None:
            return self._inner.final_diff()
        return self.diff()

    # -- what needs the container ----------------------------------------------------

    def _exec(
        self,
        cmd: str | Sequence[str],
        timeout: float = 60.0,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        stdin: bytes | None = None,
        user: str | None = None,
        max_output: int = 1 << 20,
    ) -> tuple[ExecResult, bytes]:
        return self.inner()._exec(cmd, timeout, cwd, env, stdin, user, max_output)

    def run(self, command: str, *, timeout: float = 60.0, max_output: int = 1 << 16) -> ExecResult:
        """Run a command in the persistent shell (starting the container if needed)."""
        return self.inner().run(command, timeout=timeout, max_output=max_output)

    def read_file(
        self,
        path: str,
        *,
        max_bytes: int = 1 << 20,
        timeout: float = 30.0,
        user: str | None = None,
    ) -> bytes:
        """Read one file (see `Sandbox.read_file`)."""
        return self.inner().read_file(path, max_bytes=max_bytes, timeout=timeout, user=user)

    def get_files(
        self,
        root: str,
        paths: Sequence[str] = (".",),
        *,
        max_bytes: int = 64 << 20,
        timeout: float = 60.0,
        listing: bool = False,
    ) -> list[Entry]:
        """Read files as archive entries (see `Sandbox.get_files`)."""
        box = self.inner()
        return box.get_files(root, paths, max_bytes=max_bytes, timeout=timeout, listing=listing)

    def list_files(self, path: str = ".", *, max_depth: int = 1) -> list[str]:
        """List paths under a directory (see `Sandbox.list_files`)."""
        return self.inner().list_files(path, max_depth=max_depth)

    @property
    def container(self) -> Any:
        """The started container (the engine's object; starts it if needed)."""
        return self._docker().container

    def killed_at_memory_limit(self) -> bool:
        """See `Sandbox.killed_at_memory_limit` (False when no container was started)."""
        box = self._inner
        return box is not None and box.killed_at_memory_limit()

    def inspect(self) -> dict[str, Any]:
        """The engine's view of the container (``docker inspect``; starts it if needed)."""
        return self._docker().inspect()

    def _docker(self) -> DockerSandbox:
        box = self.inner()
        if not isinstance(box, DockerSandbox):
            raise SandboxError(f"{type(box).__name__} has no container: it is not a Docker one")
        return box

    def __repr__(self) -> str:
        state = repr(self._inner) if self._inner is not None else "not started"
        return f"LazySandbox({state})"
