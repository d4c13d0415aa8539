"""A persistent bash session inside a sandbox: one exec, many commands.

Each command is sent as one line, ``eval $'<quoted>' </dev/null``, followed by a
``printf`` of an unguessable end marker that carries the exit status and the working
directory, on both stdout and stderr. A no-op command costs a fraction of a
millisecond instead of the tens of milliseconds of a fresh exec. Shell state (the
working directory, variables) persists between commands, as in a terminal.

The agent controls this shell, so it can break it (``exec >/dev/null``, ``exit``,
redefining ``printf``): the command then times out or ends, the session is killed
and a fresh one starts in the last known directory on the next command.
"""

from __future__ import annotations

import secrets
import time
from typing import TYPE_CHECKING, Protocol

from gym._sandbox._stream import STDERR, STDOUT, Capture, ExecResult, ExecSocket, FrameReader

if TYPE_CHECKING:
    from gym._sandbox._docker import DockerSandbox

__all__ = ["ExecLine", "Line", "Shell", "quote"]

_SAFE = frozenset(
    b'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-.,/:=+%@^*()[]{}<>|&;!?#~$`"'
)
_WINDOW = 8192


def quote(text: str) -> str:
    """Quote text as a bash ANSI-C string (``$'...'``) that survives any bytes."""
    return "$'" + "".join(chr(b) if b in _SAFE else f"\\x{b:02x}" for b in text.encode()) + "'"


class _Stream:
    """Output of one stream of one command, with the end-marker search window."""

    def __init__(self, cap: int, marker: bytes) -> None:
        self.capture = Capture(cap)
        self.marker = marker
        self.pending = bytearray()
        self.trailer: bytes | None = None

    def feed(self, data: bytes) -> None:
        if self.trailer is not None:
            return  # output of background jobs after the marker: not this command's
        self.pending += data
        idx = self.pending.find(self.marker)
        if idx >= 0:
            end = self.pending.find(b"\n", idx)
            if end < 0:
                return
            body = self.pending[:idx]
            self.capture.add(bytes(body[:-1] if body.endswith(b"\n") else body))
            self.trailer = bytes(self.pending[idx + len(self.marker) : end])
            self.pending.clear()
        elif len(self.pending) > _WINDOW:
            cut = len(self.pending) - _WINDOW
            self.capture.add(bytes(self.pending[:cut]))
            del self.pending[:cut]

    def flush(self) -> None:
        if self.trailer is None and self.pending:
            self.capture.add(bytes(self.pending))
            self.pending.clear()


class Line(Protocol):
    """How a shell session's bytes travel: a ``docker exec`` of bash, or the keeper."""

    @property
    def eof(self) -> bool:
        """The session ended and all its output was read."""

    def send(self, data: bytes) -> None:
        """Input for the session."""

    def frames(self, deadline: float) -> list[tuple[int, bytes]]:
        """Output frames ``(STDOUT or STDERR, bytes)``, waiting for some until the deadline.

        Raises:
            TimeoutError: nothing arrived before the deadline.
        """

    def exit_code(self) -> int | None:
        """The session's exit status, once it ended."""

    def close(self) -> None:
        """Let the session go."""


class ExecLine:
    """A session that is a ``docker exec`` of bash, its input and output attached."""

    def __init__(self, sandbox: DockerSandbox, exec_id: str, sock: ExecSocket) -> None:
        self.sandbox = sandbox
        self.exec_id = exec_id
        self.sock = sock
        self.reader = FrameReader(sock)

    @property
    def eof(self) -> bool:
        """The exec's stream ended."""
        return self.reader.eof

    def send(self, data: bytes) -> None:
        """Write to the exec's input (a closed stream reads as the end of the session)."""
        try:
            self.sock.sendall(data)
        except OSError:
            self.reader.eof = True

    def frames(self, deadline: float) -> list[tuple[int, bytes]]:
        """The exec's frames (see `FrameReader.frames`)."""
        return self.reader.frames(deadline)

    def exit_code(self) -> int | None:
        """The exec's exit status, asked of the engine."""
        return self.sandbox.exec_exit_code(self.exec_id)

    def close(self) -> None:
        """Close the exec's socket."""
        self.sock.close()


class Shell:
    """A persistent bash session in a sandbox, started lazily and restarted when broken."""

    ARGV = ("bash", "--noprofile", "--norc")

    def __init__(self, sandbox: DockerSandbox) -> None:
        self.sandbox = sandbox
        self.cwd = sandbox.config.workdir
        self._line: Line | None = None
        self._broken = False

    @property
    def alive(self) -> bool:
        """Whether a session is running (as far as is known without a round trip)."""
        return self._line is not None and not self._line.eof

    def ended_by_peer(self) -> bool:
        """Whether the engine ended the session's stream, seen without reading or waiting.

        An exec's stream ends as its process dies, so a container killed under an idle
        shell shows here at once (a keeper's session ends with the keeper's link).
        """
        return isinstance(self._line, ExecLine) and self._line.sock.ended_by_peer()

    def start(self, *, urgent: bool = True) -> None:
        """Start the bash session now (the pool does this before handing sandboxes out).

        Args:
            urgent: an episode waits for it (else a warm-pool refill, which yields).
        """
        if self._line is None:
            self._line = self.sandbox.open_line(list(self.ARGV), urgent=urgent)

    def stop(self) -> None:
        """Drop the session; its processes are killed by the caller or die with the container."""
        if self._line is not None:
            self._line.close()
        self._line = None

    def run(self, command: str, *, timeout: float = 60.0, max_output: int = 1 << 16) -> ExecResult:
        """Run a command in the session and return its result.

        Args:
            command: bash source; it may span lines and contain any characters.
            timeout: seconds before every process of the exec user is killed.
            max_output: bytes kept per stream (head and tail), the rest counted.
        """
        return self._run(f"eval {quote(command)} </dev/null", timeout, max_output)

    def run_script(
        self, script: str, *, data: bytes = b"", timeout: float = 60.0, max_output: int = 1 << 16
    ) -> ExecResult:
        """Run trusted harness shell text as is (no eval), with ``data`` right after it.

        ``data`` follows the script's line on the shell's input, for the script to read
        exactly (``head -c N``); bash reads its own input a byte at a time, so nothing
        else consumes it. Only for the harness's own commands while the shell is still
        its own (seeding a fresh sandbox): the text is not quoted.
        """
        return self._run(script, timeout, max_output, data)

    def _run(self, body: str, timeout: float, max_output: int, data: bytes = b"") -> ExecResult:
        restarted, self._broken = self._broken, False
        self.start()
        prefix = f"cd -- {quote(self.cwd)} 2>/dev/null; " if restarted else ""
        marker = f"__BOXGYM_{secrets.token_hex(12)}"
        trailer = f"printf '\\n{marker} %s %s\\n' \"$?\" \"$PWD\"; printf '\\n{marker}\\n' >&2\n"
        start = time.monotonic()
        self._send(f"{prefix}{body}\n".encode() + data + trailer.encode())
        out, err = _Stream(max_output, marker.encode()), _Stream(max_output, marker.encode())
        timed_out = self._collect(out, err, start + timeout)
        result = self._result(out, err, time.monotonic() - start, timed_out)
        result.shell_restarted = restarted
        return result

    def _send(self, data: bytes) -> None:
        assert self._line is not None
        self._line.send(data)

    def _collect(self, out: _Stream, err: _Stream, deadline: float) -> bool:
        assert self._line is not None
        streams = {STDOUT: out, STDERR: err}
        while out.trailer is None or err.trailer is None:
            try:
                frames = self._line.frames(deadline)
            except TimeoutError:
                return True
            for kind, data in frames:
                if kind in streams:
                    streams[kind].feed(data)
            if self._line.eof and not frames:
                break
        return False

    def _result(self, out: _Stream, err: _Stream, duration: float, timed_out: bool) -> ExecResult:
        out.flush()
        err.flush()
        exit_code: int | None = None
        if timed_out:
            self.sandbox.kill_processes()
        elif out.trailer is not None:
            status, _, cwd = out.trailer.decode(errors="replace").strip().partition(" ")
            exit_code = int(status) if status.lstrip("-").isdigit() else None
            self.cwd = cwd or self.cwd
        else:  # the session ended: `exit`, or the container died (raises)
            self.sandbox.ensure_running()
            assert self._line is not None
            exit_code = self._line.exit_code()
        if timed_out or out.trailer is None:
            self._broken = True
            self.stop()
        result = ExecResult(
            exit_code=exit_code,
            stdout=out.capture.text(),
            stderr=err.capture.text(),
            duration_s=duration,
            timed_out=timed_out,
            stdout_truncated=out.capture.truncated,
            stderr_truncated=err.capture.truncated,
        )
        if timed_out or exit_code == 137:
            result.oom_killed = self.sandbox.oom_since_last_check()
        return result
