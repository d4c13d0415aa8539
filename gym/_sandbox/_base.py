"""The sandbox interface: what environments and graders do in the place an episode runs.

`Sandbox` is the seam between boxgym and where commands run. `DockerSandbox` (a
hardened container) is the implementation episodes use; `LocalSandbox` (a temporary
folder and subprocesses on this machine, no isolation at all) exists so that env,
limit and runner logic can be unit-tested without an engine. Both are handed out by a
`SandboxProvider` (gym/_sandbox/_provider.py).

An implementation provides the primitives (`_exec`, `run`, `kill_processes`,
`ensure_running`, `close`); the file operations below are written once on top of them
with standard tools (``sh``, ``tar``, ``find``, ``sha256sum``), so both implementations
read, write and diff files the same way.
"""

from __future__ import annotations

import abc
import posixpath
import shlex
from collections.abc import Sequence

from gym._core._errors import ExecTimeout, ExportTooLarge, SandboxError
from gym._sandbox._config import SandboxConfig
from gym._sandbox._manifest import (
    Change,
    Manifest,
    manifest_script,
    mounts_bytes,
    new_split,
    parse_manifest,
)
from gym._sandbox._stream import ExecResult, decode
from gym._sandbox._tar import Entry, pack, unpack

__all__ = ["Sandbox"]

_ARGV_PATHS = 64 << 10
"""Bytes of paths given to ``tar`` on its command line, at most (one argument holds
128 KiB); more are given on its standard input (GNU tar)."""


class Sandbox(abc.ABC):
    """Where one episode's commands run: exec, a persistent shell, files, diffs, close.

    Every method raises `SandboxUnavailable` when the sandbox has vanished or died, which
    is distinct from a command that failed (a non-zero ``exit_code``). Paths are
    absolute, or relative to ``config.workdir``.

    Attributes:
        config: the settings the sandbox was made with (its ``workdir`` and ``tmpfs``
            mounts are where the agent may write).
        id: a short unique id.
        baseline: the manifest of the writable mounts when the episode began; `diff`
            reports changes against it.
    """

    config: SandboxConfig
    id: str
    baseline: Manifest

    # -- primitives each implementation provides -----------------------------------------

    @property
    @abc.abstractmethod
    def closed(self) -> bool:
        """Whether `close` was called."""

    @abc.abstractmethod
    def close(self) -> None:
        """Remove the sandbox and everything in it; safe to call more than once."""

    @abc.abstractmethod
    def ensure_running(self) -> None:
        """Raise `SandboxUnavailable` unless the sandbox is still usable."""

    @abc.abstractmethod
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
        """`exec`, also returning the kept standard output as raw bytes."""

    @abc.abstractmethod
    def run(self, command: str, *, timeout: float = 60.0, max_output: int = 1 << 16) -> ExecResult:
        """Run a command in the persistent shell (its directory and variables persist).

        Args:
            command: bash source; it may span lines and contain any characters.
            timeout: seconds before the command and everything it started are killed.
            max_output: bytes kept per stream (head and tail), the rest counted.
        """

    @abc.abstractmethod
    def kill_processes(self, user: str | None = None) -> None:
        """Kill every process the agent started (before an export: nothing may change)."""

    def killed_at_memory_limit(self) -> bool:
        """Whether the sandbox ended because its memory limit killed its main process.

        Asked once it failed (`SandboxUnavailable`): what fills its memory is the agent's
        (its processes, its files in memory), so such an end is the agent's fail, not an
        infrastructure error. False where the provider cannot tell.
        """
        return False

    # -- built on the primitives ---------------------------------------------------------

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def exec(
        self,
        cmd: str | Sequence[str],
        *,
        timeout: float = 60.0,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        stdin: bytes | None = None,
        user: str | None = None,
        max_output: int = 1 << 20,
    ) -> ExecResult:
        """Run a command in a fresh process (isolated from the persistent shell's state).

        Args:
            cmd: an argv list, or a string run by ``bash -c``.
            timeout: seconds before the command and everything it started are killed.
            cwd: working directory (the sandbox workdir by default).
            env: extra environment variables.
            stdin: bytes fed to the command's standard input, then closed.
            user: uid:gid to run as (the config's exec user by default).
            max_output: bytes kept per stream (head and tail), the rest counted.
        """
        return self._exec(cmd, timeout, cwd, env, stdin, user, max_output)[0]

    def _abs(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self.config.workdir, path))

    def read_file(
        self,
        path: str,
        *,
        max_bytes: int = 1 << 20,
        timeout: float = 30.0,
        user: str | None = None,
    ) -> bytes:
        """Read one file (at most ``max_bytes``; longer files raise `SandboxError`).

        Args:
            path: absolute, or relative to the workdir.
            max_bytes: the largest file accepted.
            timeout: seconds allowed.
            user: uid:gid to read as (the exec user by default).
        """
        target = self._abs(path)
        script = (
            'test -f "$1" || { echo "not a file: $1" >&2; exit 2; }; '
            f'head -c {max_bytes + 1} "$1"'
        )
        result, data = self._exec(
            ["sh", "-c", script, "sh", target], timeout, user=user, max_output=max_bytes + 2
        )
        self._check(result, f"read {target}")
        if len(data) > max_bytes:
            raise SandboxError(f"{target} is larger than {max_bytes} bytes")
        return data

    def write_file(
        self, path: str, data: bytes, *, mode: int = 0o644, timeout: float = 30.0
    ) -> None:
        """Write one file, creating parent directories."""
        self.put_files(
            posixpath.dirname(self._abs(path)),
            {posixpath.basename(path): data},
            mode=mode,
            timeout=timeout,
        )

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
        """Write files (relative path -> bytes) under ``root`` through a tar stream.

        Args:
            root: absolute directory in the sandbox; created if missing.
            files: relative paths and their contents.
            mode: permission bits of every file.
            timeout: seconds allowed.
            via_shell: send through the persistent shell where the implementation has a
                faster path for it (only while the shell is still the harness's own, for
                example when seeding a fresh sandbox).
            user: uid:gid that writes the files (the exec user by default).
        """
        folder = shlex.quote(self._abs(root))
        script = f"mkdir -p {folder} && tar -x --no-same-owner -m -C {folder}"
        result = self.exec(
            ["sh", "-c", script], stdin=pack(files, mode=mode), timeout=timeout, user=user
        )
        self._check(result, f"write {len(files)} files under {root}")

    def get_files(
        self,
        root: str,
        paths: Sequence[str] = (".",),
        *,
        max_bytes: int = 64 << 20,
        timeout: float = 60.0,
        listing: bool = False,
    ) -> list[Entry]:
        """Read files under ``root`` as checked archive entries (links never followed).

        Args:
            root: the folder the paths are relative to.
            paths: what to read.
            max_bytes: the most content accepted.
            timeout: seconds allowed.
            listing: list links, fifos and devices as entries instead of refusing them.

        Raises:
            UnsafeArchive: an entry would escape ``root`` (absolute, ``..``; links and
                special files too unless ``listing``).
            ExportTooLarge: the files hold more than ``max_bytes``.
        """
        folder = shlex.quote(self._abs(root))
        quoted = " ".join(shlex.quote(p) for p in paths)
        names: bytes | None = None
        if len(quoted) <= _ARGV_PATHS:
            script = f"cd {folder} && tar -c --ignore-failed-read -- {quoted}"
        else:  # past what one argument may hold (the agent named them): on standard input
            script = f"cd {folder} && tar -c --ignore-failed-read --verbatim-files-from --null -T -"
            names = b"\0".join(p.encode("utf-8", "surrogateescape") for p in paths) + b"\0"
        result, raw = self._exec(
            ["sh", "-c", script], timeout, stdin=names, max_output=max_bytes + 1
        )
        self._check(result, f"archive {root}")
        if result.stdout_truncated:
            raise ExportTooLarge(f"files under {root} exceed {max_bytes} bytes")
        return unpack(raw, max_bytes=max_bytes, listing=listing)

    def list_files(self, path: str = ".", *, max_depth: int = 1) -> list[str]:
        """List paths under a directory (relative to it), directories ending in ``/``."""
        target = self._abs(path)
        argv = ["find", target, "-mindepth", "1", "-maxdepth", str(max_depth)]
        result, raw = self._exec([*argv, "-printf", "%y %P\\0"], 30)
        self._check(result, f"list {target}")
        items = []
        for rec in raw.split(b"\0"):
            if rec:
                kind, _, name = decode(rec).partition(" ")
                items.append(name + ("/" if kind == "d" else ""))
        return sorted(items)

    def snapshot(self, roots: Sequence[str] | None = None) -> Manifest:
        """A manifest (type, mode, size, sha256) of everything under the writable mounts."""
        roots = list(roots or self.config.tmpfs)
        split = new_split()
        script = manifest_script(roots, split, mounts_bytes(self.config))
        result, raw = self._exec(["sh", "-c", script], 120, max_output=64 << 20)
        self._check(result, "snapshot")
        if result.stdout_truncated:  # a cut listing would read as files deleted
            raise ExportTooLarge(f"the files under {', '.join(roots)} are over the listing cap")
        return parse_manifest(raw, split)

    def diff(self) -> list[Change]:
        """Changes in the writable mounts since the baseline."""
        return self.baseline.diff(self.snapshot())

    def final_diff(self) -> list[Change]:
        """Kill every process the agent started, then the changes since the baseline.

        What an export does first: after this, nothing in the sandbox changes any more.
        Implementations may do both in one round trip.
        """
        self.kill_processes()
        return self.diff()

    def _check(self, result: ExecResult, what: str) -> None:
        if result.timed_out:
            raise ExecTimeout(
                f"{what} in sandbox {self.id} timed out after {result.duration_s:.0f}s"
            )
        if result.exit_code != 0:
            self.ensure_running()
            why = result.stderr.strip()[:500] or "no error output"
            raise SandboxError(f"could not {what}: exit status {result.exit_code}: {why}")
