"""`LocalSandbox`: a temporary folder and subprocesses on this machine, for unit tests.

NOT A SECURITY BOUNDARY. Commands run as the user running Python, on this machine's
filesystem and network, with no limits. It exists so that environment, limit, resume
and runner logic can be unit-tested in milliseconds without a Docker engine, with
trusted, scripted commands only. `LocalSandboxes` refuses to make one unless asked
with ``allow_unsafe=True``; nothing in boxgym ever chooses it by itself.

The sandbox's mounts (its ``workdir`` and ``tmpfs`` paths, for example /workspace and
/tmp) become folders under one temporary directory, and its ``config`` names those
folders, so an environment that derives its paths from ``sandbox.config`` works
unchanged. Absolute paths under an original mount given to the file operations are
mapped too; paths inside command text are not. The ``user`` arguments are ignored.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import queue
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Sequence
from typing import IO

from gym._core._errors import SandboxUnavailable
from gym._sandbox._base import Sandbox
from gym._sandbox._config import SandboxConfig
from gym._sandbox._manifest import Manifest
from gym._sandbox._shell import _Stream, quote
from gym._sandbox._stream import STDERR, STDOUT, Capture, ExecResult, result_of

__all__ = ["LocalSandbox"]


class LocalSandbox(Sandbox):
    """A temporary folder and local subprocesses standing in for a container (unit tests).

    Not a security boundary: see the module docstring. Create through
    ``LocalSandboxes(allow_unsafe=True)``.

    Args:
        config: the settings of the sandbox it stands in for (mounts are mapped, limits
            and hardening are not applied).
    """

    def __init__(self, config: SandboxConfig) -> None:
        self.id = uuid.uuid4().hex[:16]
        self.root = tempfile.mkdtemp(prefix=f"boxgym-local-{self.id}-")
        # the folder goes when the sandbox is collected or Python exits, even unclosed
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.root, ignore_errors=True)
        self._mounts = {m: self.root + m for m in sorted({config.workdir, *config.tmpfs})}
        for folder in self._mounts.values():
            os.makedirs(folder, exist_ok=True)
        self.config = config.model_copy(
            update={
                "workdir": self._mounts[config.workdir],
                "tmpfs": {self._mounts[k]: v for k, v in config.tmpfs.items()},
            }
        )
        self.baseline = Manifest()
        self._groups: set[int] = set()
        self._closed = False
        self._shell = _LocalShell(self)

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether `close` was called."""
        return self._closed

    def close(self) -> None:
        """Kill every process it started and delete its folder; safe to call again."""
        if self._closed:
            return
        self._closed = True
        self.kill_processes()
        self._cleanup()

    def ensure_running(self) -> None:
        """Raise `SandboxUnavailable` once closed (or if its folder was removed)."""
        if self._closed or not os.path.isdir(self.root):
            raise SandboxUnavailable(f"local sandbox {self.id} was closed")

    def kill_processes(self, user: str | None = None) -> None:
        """Kill the process groups of its running commands and of its shell.

        A process that left its group (``setsid``) is not found: not a boundary.
        """
        self._shell.stop()
        for group in list(self._groups):
            _kill_group(group)

    # -- commands ------------------------------------------------------------------------

    def environment(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The variables its commands see (HOME and TMPDIR point into its folder)."""
        home = self._mounts.get("/home/agent", self.config.workdir)
        base = {
            "HOME": home,
            "TMPDIR": self._mounts.get("/tmp", self.root),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "TERM": "dumb",
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "PAGER": "cat",
            "GIT_PAGER": "cat",
        }
        return {**base, **self.config.env, **(extra or {})}

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
        self.ensure_running()
        argv = ["bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        start = time.monotonic()
        proc = subprocess.Popen(
            argv,
            cwd=self._abs(cwd) if cwd else self.config.workdir,
            env=self.environment(env),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self._groups.add(proc.pid)
        try:
            out, err, timed_out = _communicate(proc, stdin, timeout, max_output)
        finally:
            self._groups.discard(proc.pid)
        exit_code = None if timed_out else _exit_code(proc.returncode)
        return result_of(out, err, exit_code, timed_out, start), out.bytes()

    def run(self, command: str, *, timeout: float = 60.0, max_output: int = 1 << 16) -> ExecResult:
        """Run a command in the persistent local bash session."""
        self.ensure_running()
        return self._shell.run(command, timeout=timeout, max_output=max_output)

    # -- paths ---------------------------------------------------------------------------

    def _abs(self, path: str) -> str:
        if path == self.root or path.startswith(self.root + "/"):
            return posixpath.normpath(path)
        for mount, local in self._mounts.items():
            if path == mount or path.startswith(mount + "/"):
                return posixpath.normpath(local + path[len(mount) :])
        return super()._abs(path)

    def __repr__(self) -> str:
        return f"LocalSandbox(id={self.id!r}, root={self.root!r})"


def _exit_code(returncode: int) -> int:
    """A shell-style status: a process killed by signal N exits 128 + N, as in a container."""
    return 128 - returncode if returncode < 0 else returncode


def _kill_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)


def _drain(stream: IO[bytes], capture: Capture) -> None:
    for chunk in iter(lambda: os.read(stream.fileno(), 1 << 16), b""):
        capture.add(chunk)


def _feed(stream: IO[bytes], data: bytes) -> None:
    try:
        with contextlib.suppress(OSError):
            stream.write(data)
    finally:
        with contextlib.suppress(OSError):
            stream.close()


def _communicate(
    proc: subprocess.Popen[bytes], stdin: bytes | None, timeout: float, cap: int
) -> tuple[Capture, Capture, bool]:
    """Feed stdin, read both streams within their caps, kill the group at the deadline."""
    out, err = Capture(cap), Capture(cap)
    assert proc.stdout is not None and proc.stderr is not None
    threads = [
        threading.Thread(target=_drain, args=(proc.stdout, out), daemon=True),
        threading.Thread(target=_drain, args=(proc.stderr, err), daemon=True),
    ]
    if stdin is not None and proc.stdin is not None:
        threads.append(threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True))
    for thread in threads:
        thread.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
    _kill_group(proc.pid)  # what it left running in the background goes too
    proc.wait()
    for thread in threads:
        thread.join(timeout=5)
    for stream in (proc.stdout, proc.stderr):
        stream.close()
    return out, err, timed_out


class _LocalShell:
    """A persistent local bash session, framed by end markers like the container shell."""

    def __init__(self, sandbox: LocalSandbox) -> None:
        self.sandbox = sandbox
        self.cwd = sandbox.config.workdir
        self._proc: subprocess.Popen[bytes] | None = None
        self._chunks: queue.Queue[tuple[int, bytes]] = queue.Queue()
        self._readers: list[threading.Thread] = []
        self._broken = False

    def start(self) -> None:
        if self._proc is not None:
            return
        self._chunks = queue.Queue()
        self._proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            cwd=self.cwd,
            env=self.sandbox.environment(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self._readers = [
            threading.Thread(target=self._read, args=(kind, stream), daemon=True)
            for kind, stream in ((STDOUT, self._proc.stdout), (STDERR, self._proc.stderr))
        ]
        for thread in self._readers:
            thread.start()

    def _read(self, kind: int, stream: IO[bytes]) -> None:
        for chunk in iter(lambda: os.read(stream.fileno(), 1 << 16), b""):
            self._chunks.put((kind, chunk))
        self._chunks.put((kind, b""))

    def stop(self) -> None:
        if self._proc is None:
            return
        proc, self._proc = self._proc, None
        _kill_group(proc.pid)
        proc.wait()
        for thread in self._readers:
            thread.join(timeout=5)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._broken = True

    def run(self, command: str, *, timeout: float, max_output: int) -> ExecResult:
        restarted, self._broken = self._broken, False
        self.start()
        assert self._proc is not None and self._proc.stdin is not None
        prefix = f"cd -- {quote(self.cwd)} 2>/dev/null; " if restarted else ""
        marker = f"__BOXGYM_{secrets.token_hex(12)}"
        trailer = f"printf '\\n{marker} %s %s\\n' \"$?\" \"$PWD\"; printf '\\n{marker}\\n' >&2\n"
        start = time.monotonic()
        with contextlib.suppress(OSError):
            self._proc.stdin.write(f"{prefix}eval {quote(command)} </dev/null\n{trailer}".encode())
            self._proc.stdin.flush()
        out, err = _Stream(max_output, marker.encode()), _Stream(max_output, marker.encode())
        timed_out = self._collect(out, err, start + timeout)
        result = self._result(out, err, timed_out)
        result.duration_s = time.monotonic() - start
        result.shell_restarted = restarted
        return result

    def _collect(self, out: _Stream, err: _Stream, deadline: float) -> bool:
        streams, ended = {STDOUT: out, STDERR: err}, set()
        while out.trailer is None or err.trailer is None:
            try:
                kind, data = self._chunks.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return True
            if not data:
                ended.add(kind)
                if len(ended) == 2:
                    break
            else:
                streams[kind].feed(data)
        return False

    def _result(self, out: _Stream, err: _Stream, timed_out: bool) -> ExecResult:
        out.flush()
        err.flush()
        exit_code: int | None = None
        if out.trailer is not None and not timed_out:
            status, _, cwd = out.trailer.decode(errors="replace").strip().partition(" ")
            exit_code = int(status) if status.lstrip("-").isdigit() else None
            self.cwd = cwd or self.cwd
        elif not timed_out and self._proc is not None:  # the session ended (`exit`)
            exit_code = _exit_code(self._proc.wait())
        if timed_out or out.trailer is None:
            self.stop()
        return ExecResult(
            exit_code=exit_code,
            stdout=out.capture.text(),
            stderr=err.capture.text(),
            timed_out=timed_out,
            stdout_truncated=out.capture.truncated,
            stderr_truncated=err.capture.truncated,
        )
