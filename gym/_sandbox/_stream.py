"""Reading Docker's multiplexed exec stream with per-stream caps and deadlines."""

from __future__ import annotations

import select
import socket
import struct
import threading
import time
from typing import Any

from pydantic import BaseModel, Field

__all__ = ["Capture", "ExecResult", "ExecSocket", "FrameReader", "decode", "pump", "result_of"]

STDOUT, STDERR = 1, 2


def decode(data: bytes) -> str:
    """Decode container output tolerantly: invalid UTF-8 and NULs become U+FFFD."""
    return data.decode("utf-8", errors="replace").replace("\x00", "\ufffd")


class ExecResult(BaseModel):
    """What one command in a sandbox did."""

    exit_code: int | None
    """Exit status; None when the command was killed by a timeout or never finished."""
    stdout: str = ""
    """Standard output, decoded tolerantly, with a marker where it was truncated."""
    stderr: str = ""
    """Standard error, decoded tolerantly, with a marker where it was truncated."""
    duration_s: float = 0.0
    """Wall-clock seconds the command took, measured on the host."""
    timed_out: bool = False
    """The command outlived its timeout and all of its processes were killed."""
    oom_killed: bool = False
    """A process of the command was killed by the container's memory limit."""
    stdout_truncated: bool = False
    """Standard output was longer than the cap and was cut."""
    stderr_truncated: bool = False
    """Standard error was longer than the cap and was cut."""
    shell_restarted: bool = Field(default=False, exclude=True)
    """The persistent shell had to be restarted (its variables are gone)."""

    @property
    def ok(self) -> bool:
        """The command finished with exit status 0."""
        return self.exit_code == 0 and not self.timed_out


def result_of(
    out: Capture, err: Capture, exit_code: int | None, timed_out: bool, start: float
) -> ExecResult:
    """The result of a command whose streams were captured, started at ``start``."""
    return ExecResult(
        exit_code=exit_code,
        stdout=out.text(),
        stderr=err.text(),
        duration_s=time.monotonic() - start,
        timed_out=timed_out,
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
    )


class Capture:
    """Keeps the head and tail of a stream within a byte cap and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, data: bytes) -> None:
        """Append data, keeping at most ``cap`` bytes (three quarters head, one tail)."""
        room = self.cap * 3 // 4 - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.tail += data
        keep = self.cap - self.cap * 3 // 4
        if len(self.tail) > keep:
            self.dropped += len(self.tail) - keep
            del self.tail[: len(self.tail) - keep]

    @property
    def truncated(self) -> bool:
        """Whether any bytes were dropped."""
        return self.dropped > 0

    def bytes(self) -> bytes:
        """The kept bytes, without a marker."""
        return bytes(self.head + self.tail)

    def text(self) -> str:
        """The kept output decoded, with an explicit marker where bytes were dropped."""
        if not self.dropped:
            return decode(bytes(self.head + self.tail))
        marker = f"\n[... {self.dropped} bytes truncated by boxgym ...]\n"
        return decode(bytes(self.head)) + marker + decode(bytes(self.tail))


class ExecSocket:
    """The raw socket of an attached exec, closed completely (socket and its file object).

    The docker SDK hands out the socket under the HTTP response, but the response's
    buffered reader may already hold the first frames: a command that answers before the
    client has parsed the ``101 UPGRADED`` headers writes its output into the same read.
    Those bytes are taken over here and returned first, so no output is lost under load.
    """

    def __init__(self, socket_io: Any) -> None:
        self._io = socket_io
        self._sock: socket.socket = socket_io._sock
        self._pending = _buffered(socket_io, self._sock)

    def recv(self, size: int) -> bytes:
        """Receive up to ``size`` bytes (first those the HTTP parser buffered)."""
        if self._pending:
            data, self._pending = self._pending[:size], self._pending[size:]
            return data
        return self._sock.recv(size)

    def settimeout(self, seconds: float | None) -> None:
        """Set the timeout of later reads and writes."""
        self._sock.settimeout(seconds)

    def sendall(self, data: bytes) -> None:
        """Send all of data."""
        self._sock.sendall(data)

    def ended_by_peer(self) -> bool:
        """Whether the engine closed this connection (its container is gone).

        Nothing is read and nothing waited for: a readable socket whose next byte is the end.
        """
        if self._pending:
            return False
        try:
            waiting = select.poll()  # not select(): a descriptor past 1023 is refused there
            waiting.register(self._sock, select.POLLIN)
            if not waiting.poll(0):
                return False
            return self._sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except (BlockingIOError, InterruptedError):
            return False
        except (OSError, ValueError):  # closed here, or reset by the engine
            return True

    def shutdown_write(self) -> None:
        """Close the writing half (the command sees end of input)."""
        self._sock.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        """Close the file object and the socket (no fd left behind)."""
        for closer in (self._io.close, self._sock.close):
            try:
                closer()
            except OSError:
                pass


def _buffered(socket_io: Any, sock: socket.socket) -> bytes:
    """Bytes the HTTP response's reader read past the headers (without blocking)."""
    try:
        reader = socket_io._response.raw._fp.fp
    except AttributeError:
        return b""
    timeout = sock.gettimeout()
    sock.setblocking(False)
    try:
        return bytes(reader.read1(len(reader.peek(1))))
    except OSError:
        return b""
    finally:
        sock.settimeout(timeout)


class FrameReader:
    """Reads frames of ``[stream, 0, 0, 0, size:4]`` headers from an exec socket."""

    def __init__(self, sock: ExecSocket) -> None:
        self.sock = sock
        self.buf = bytearray()
        self.eof = False

    def frames(self, deadline: float) -> list[tuple[int, bytes]]:
        """Return the complete frames available, waiting until some arrive or the deadline.

        Raises:
            TimeoutError: nothing arrived before the deadline.
        """
        while True:
            out = self._parse()
            if out or self.eof:
                return out
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("exec produced nothing before its deadline")
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(1 << 16)
            except TimeoutError:
                raise
            except OSError:
                data = b""
            if not data:
                self.eof = True
            self.buf += data

    def _parse(self) -> list[tuple[int, bytes]]:
        out: list[tuple[int, bytes]] = []
        while len(self.buf) >= 8:
            (size,) = struct.unpack(">I", self.buf[4:8])
            if len(self.buf) < 8 + size:
                break
            out.append((self.buf[0], bytes(self.buf[8 : 8 + size])))
            del self.buf[: 8 + size]
        return out


def _send(sock: ExecSocket, data: bytes) -> None:
    try:
        sock.sendall(data)
        sock.shutdown_write()
    except OSError:
        pass


def pump(
    sock: ExecSocket, stdin: bytes | None, deadline: float, cap: int
) -> tuple[Capture, Capture, bool]:
    """Feed stdin (then close it) and read both streams until EOF or the deadline.

    Returns:
        (stdout, stderr, timed_out).
    """
    out, err = Capture(cap), Capture(cap)
    if stdin is not None:
        threading.Thread(target=_send, args=(sock, stdin), daemon=True).start()
    reader = FrameReader(sock)
    while not reader.eof:
        try:
            frames = reader.frames(deadline)
        except TimeoutError:
            return out, err, True
        for kind, data in frames:
            (out if kind == STDOUT else err if kind == STDERR else Capture(0)).add(data)
    return out, err, False
