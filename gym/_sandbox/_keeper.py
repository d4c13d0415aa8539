"""The harness's side of the keeper, an agent container's main process.

The keeper (gym/_sandbox/keeper/boxgym_keeper.py, run by the container's own Python)
holds the agent's shell, runs the harness's commands and freezes the container at an
episode's end, all over the container's link, so that an episode needs no ``docker
exec``: each one is a runc execution, its init and the engine's bookkeeping (about as
much machine CPU as a tenth of a container's whole lifecycle). Its protocol is in the
keeper's docstring.

`KeeperLink` speaks it over the link's attached socket. Commands may run at once (each
has an id); kills, freezes and counts are one at a time.
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
import marshal
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gym._core._errors import ExecTimeout, ExportTooLarge, SandboxUnavailable, UnreadableState
from gym._sandbox._manifest import Manifest, new_split, parse_manifest
from gym._sandbox._stream import STDERR, STDOUT, Capture, ExecSocket, FrameReader

__all__ = [
    "KEEPER_COMMAND",
    "LISTING_BYTES",
    "LISTING_ENTRIES",
    "KeeperLink",
    "KeeperShell",
    "boot_input",
]

LISTING_BYTES = 64 << 20
"""The most bytes a listing of the writable mounts (paths, then hashes) may be."""
LISTING_ENTRIES = 100_000
"""The most entries it may list: about 100 MB of the harness's memory once parsed."""
MAX_FRAME = 16 << 20
"""The largest frame the keeper sends is about 1 MiB; a longer one means the link is
corrupt (the container is then treated as gone)."""

SOURCE = (Path(__file__).parent / "keeper" / "boxgym_keeper.py").read_bytes()
_BOOT = (
    "import marshal, os, sys\n"
    "def r(n):\n"
    "    b = b''\n"
    "    while len(b) < n:\n"
    "        b += os.read(0, n - len(b)) or os._exit(2)\n"
    "    return b\n"
    "magic, code, source = (r(int(r(10))) for _ in range(3))\n"
    "ours = getattr(sys.modules.get('_frozen_importlib_external'), 'MAGIC_NUMBER', None)\n"
    "exec(marshal.loads(code) if magic == ours else compile(source, 'boxgym_keeper', 'exec'))\n"
)
KEEPER_COMMAND = ["python3", "-I", "-S", "-c", _BOOT]
"""The main process of an agent container whose image has ``python3``: it reads the
keeper (`boot_input`, sent by `KeeperLink.boot`) from its input, then runs it."""


@functools.lru_cache(maxsize=4)
def boot_input(source: bytes) -> bytes:
    """What the boot line reads: this Python's magic number, the keeper compiled here, its source.

    A container whose Python has the same magic number runs the compiled code (no compile
    in every agent container, about 3 ms of CPU each); any other compiles the source.
    """
    code = marshal.dumps(compile(source, "boxgym_keeper", "exec", dont_inherit=True))
    parts = (importlib.util.MAGIC_NUMBER, code, source)
    return b"".join(b"%010d" % len(part) + part for part in parts)


_SHELL_KINDS = {b"o": STDOUT, b"e": STDERR}
_ACK_EVERY = 1 << 18
"""Bytes of the shell's output read before the keeper is told (``W``): a quarter of its
window (boxgym_keeper.WINDOW), so that a command's usual output costs no extra message."""
_COMMAND_KINDS = {b"O": STDOUT, b"E": STDERR}


class KeeperLink:
    """Requests to a keeper and its answers, over the container's attached link.

    Any thread may wait for an answer; whichever finds no reader at work reads for all
    (`_wait`), putting each frame where its waiter looks: a command's output under its
    id, the shell's in `shell_frames`, the rest (one kill, freeze or count at a time) in
    the control queue.
    """

    listing_bytes = LISTING_BYTES
    """The most bytes a listing may be, unless a call says otherwise."""
    listing_entries = LISTING_ENTRIES
    """The most entries a listing may hold, unless a call says otherwise."""

    def __init__(self, sock: ExecSocket, container_id: str, hashed: int | None = None) -> None:
        self.sock = sock
        self.container_id = container_id
        self.hashed = hashed
        """The most bytes of files a listing may read for their hashes, summed before
        any is read (each file once, at its length): what the writable mounts can hold
        (`gym._sandbox._manifest.mounts_bytes`); None: no bound."""
        self._reader = FrameReader(sock)
        self._buf = bytearray()
        self._cond = threading.Condition()
        self._reading = False
        self._gone_why = ""
        self._ids = itertools.count(1)
        self._commands: dict[bytes, deque[tuple[bytes, bytes]]] = {}
        self._control: deque[tuple[bytes, bytes]] = deque()
        self._control_lock = threading.Lock()
        self._desync = ""
        """Why the control line is out of step ('' while it is in step)."""
        self._send_lock = threading.Lock()
        self.shell_frames: deque[tuple[int, bytes]] = deque()
        """Output of the shell not yet read by it."""
        self.shell_end: int | None = None
        """The exit status of the shell that ended, until the shell reads it."""
        self.shell_ended = False
        self._unacked = 0  # bytes of the shell's output read but not yet granted back
        self.stderr = bytearray()
        """What the keeper itself wrote to its standard error (its own problems)."""

    # -- frames ------------------------------------------------------------------------

    def send(self, kind: bytes, payload: bytes = b"") -> None:
        """Send one request frame.

        Raises:
            SandboxUnavailable: the link is closed (the container is gone).
        """
        try:
            with self._send_lock:
                self.sock.sendall(kind + struct.pack(">I", len(payload)) + payload)
        except OSError as exc:
            raise self._gone(f"could not write to it: {exc}") from exc

    def _wait(self, ready: Callable[[], bool], deadline: float) -> None:
        """Return once ``ready()`` holds, reading the link meanwhile (any thread reads).

        Raises:
            TimeoutError: not ready by the deadline.
            SandboxUnavailable: the keeper ended.
        """
        with self._cond:
            while not ready():
                if self._gone_why:
                    raise self._gone(self._gone_why)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("the keeper did not answer in time")
                if self._reading:
                    self._cond.wait(left)
                    continue
                self._reading = True
                self._cond.release()
                try:
                    frames = self._read(deadline)
                except TimeoutError:
                    frames = []
                except SandboxUnavailable as exc:
                    self._gone_why, frames = str(exc), []
                finally:
                    self._cond.acquire()
                    self._reading = False
                for kind, payload in frames:
                    self._route(kind, payload)
                self._cond.notify_all()

    def _read(self, deadline: float) -> list[tuple[bytes, bytes]]:
        if self._reader.eof:
            raise self._gone("it ended")
        for stream, data in self._reader.frames(deadline):
            if stream == STDERR:
                self.stderr += data[-4096:]
                continue
            self._buf += data
        frames = []
        while len(self._buf) >= 5:
            (size,) = struct.unpack(">I", self._buf[1:5])
            if size > MAX_FRAME:
                raise self._gone(f"it sent a frame of {size} bytes, over {MAX_FRAME}")
            if len(self._buf) < 5 + size:
                break
            frames.append((bytes(self._buf[:1]), bytes(self._buf[5 : 5 + size])))
            del self._buf[: 5 + size]
        if self._reader.eof and not frames:
            raise self._gone("it ended")
        return frames

    def _route(self, kind: bytes, payload: bytes) -> None:
        if kind in _SHELL_KINDS:
            self.shell_frames.append((_SHELL_KINDS[kind], payload))
        elif kind == b"x":
            self.shell_ended, self.shell_end = True, _status(payload)
        elif kind in b"OEX" and len(kind) == 1:
            queue = self._commands.get(payload[:4])
            if queue is not None:  # else a command given up on: dropped
                queue.append((kind, payload[4:]))
        else:
            self._control.append((kind, payload))

    def _gone(self, why: str) -> SandboxUnavailable:
        said = self.stderr.decode(errors="replace").strip()[-500:]
        return SandboxUnavailable(
            f"the keeper of container {self.container_id[:12]} is gone ({why})"
            + (f": {said}" if said else "")
        )

    # -- requests ------------------------------------------------------------------------

    def boot(self) -> None:
        """Send the keeper to the boot line (`KEEPER_COMMAND`)."""
        try:
            self.sock.sendall(boot_input(SOURCE))
        except OSError as exc:
            raise self._gone(f"could not write to it: {exc}") from exc

    def ready(self, timeout: float) -> None:
        """Wait for the keeper's first frame (it is up and unreachable by the agent)."""
        kind, _ = self._control_frame(time.monotonic() + timeout)
        if kind != b"r":
            raise self._gone(f"it answered {kind!r} before it was ready")

    def start_shell(self, argv: Sequence[str], env: dict[str, str], cwd: str) -> None:
        """Start the shell (a no-op while one runs)."""
        with self._cond:
            self.shell_frames.clear()
            self.shell_ended, self.shell_end = False, None
            self._unacked = 0
        self.send(b"S", marshal.dumps({"argv": list(argv), "env": env, "cwd": cwd}))

    def shell_output(self, deadline: float) -> list[tuple[int, bytes]]:
        """The shell's output frames available, waiting for some until the deadline.

        Raises:
            TimeoutError: nothing for the shell before the deadline.
            SandboxUnavailable: the keeper ended.
        """
        self._wait(lambda: bool(self.shell_frames) or self.shell_ended, deadline)
        with self._cond:
            out = list(self.shell_frames)
            self.shell_frames.clear()
        self._unacked += sum(len(data) for _, data in out)
        if self._unacked >= _ACK_EVERY and not self.shell_ended:
            self.send(b"W", struct.pack(">I", self._unacked))  # the keeper may send as much
            self._unacked = 0
        return out

    def run(
        self,
        argv: Sequence[str],
        *,
        env: dict[str, str],
        cwd: str,
        stdin: bytes,
        deadline: float,
        cap: int,
    ) -> tuple[Capture, Capture, int | None, bool]:
        """Run a command as the agent's uid; (stdout, stderr, exit status, timed out).

        On a timeout every process of the uid is killed (the agent's too), as a timed-out
        exec's would be.
        """
        out, err = Capture(cap), Capture(cap)
        tag = struct.pack(">I", next(self._ids))
        queue: deque[tuple[bytes, bytes]] = deque()
        with self._cond:
            self._commands[tag] = queue
        request = marshal.dumps({"argv": list(argv), "env": env, "cwd": cwd})
        try:
            self.send(b"R", tag + struct.pack(">I", len(request)) + request + stdin)
            while True:
                try:
                    self._wait(lambda: bool(queue), deadline)
                except TimeoutError:
                    self.kill(time.monotonic() + 30)
                    return out, err, None, True
                with self._cond:
                    kind, payload = queue.popleft()
                if kind == b"X":
                    return out, err, _status(payload), False
                (out if kind == b"O" else err).add(payload)
        finally:
            with self._cond:
                self._commands.pop(tag, None)

    def kill(self, deadline: float) -> None:
        """Kill every process of the agent's uid (the shell and any command too)."""
        with self._control_lock:
            self.send(b"K")
            self._until(b"k", deadline)

    def freeze(
        self,
        roots: Sequence[str],
        deadline: float,
        cap: int | None = None,
        entries: int | None = None,
    ) -> Manifest:
        """Kill every process of the agent's uid, then list and hash the roots.

        Returns:
            What `gym._sandbox._manifest.manifest_script` lists for the roots.

        Args:
            roots: the folders to list.
            deadline: when to give up (`ExecTimeout`).
            cap: the most bytes of listing (`listing_bytes` by default).
            entries: the most entries (`listing_entries` by default).

        Raises:
            ExportTooLarge: what the roots hold is over ``cap`` bytes or ``entries``
                entries, or its files over `hashed` bytes to read (the keeper said so
                before reading any: the agent's doing, never a fault).
            SandboxUnavailable: the keeper or its container is gone.
            ExecTimeout: no answer by the deadline.
        """
        return self._listing(b"F", roots, deadline, cap, entries)

    def listing(
        self,
        roots: Sequence[str],
        deadline: float,
        cap: int | None = None,
        entries: int | None = None,
    ) -> Manifest:
        """List and hash the roots (no process is killed); raises as `freeze` does."""
        return self._listing(b"N", roots, deadline, cap, entries)

    def archive(self, base: str, roots: Sequence[str], deadline: float, cap: int) -> bytes:
        """A tar of what is under the roots, made by the keeper as the agent's uid.

        What ``tar -c`` run as the agent would archive (links not followed, what the agent
        cannot read left out), in one round trip and no process (a fork's copy).

        Args:
            base: the folder the roots are under; entries are named relative to it.
            roots: the folders (relative to ``base``) whose contents are archived.
            deadline: when to give up (`ExecTimeout`).
            cap: the most bytes of archive.

        Every entry under the roots counts against `listing_entries`, those left out too
        (an unreadable file, a socket): the keeper's work is bounded as a listing's is.

        Raises:
            ExportTooLarge: the archive would be over ``cap`` bytes or its entries over
                `listing_entries` (the keeper said so).
            UnreadableState: files or folders under the roots are unreadable to the
                agent's user (the keeper said so): the archive is not the state.
            SandboxUnavailable: the keeper or its container is gone.
            ExecTimeout: no answer by the deadline.
        """
        request = {"base": base, "roots": list(roots), "cap": cap, "entries": self.listing_entries}
        data, over, end = self._bounded(b"A", b"a", request, deadline)
        if over:
            what, _, limit = over.partition(" ")
            raise ExportTooLarge(
                f"the files under {', '.join(roots)} are over the archive cap ({limit} {what})"
            )
        if end.startswith(b"unread "):
            count = end[7:].decode("ascii", errors="replace")[:12]
            raise UnreadableState(
                f"{count} of the files or folders under {', '.join(roots)} are unreadable to "
                "the agent's own user (it made them so): they cannot be copied"
            )
        return data

    def oom_kills(self, deadline: float) -> int | None:
        """How many processes the memory limit has killed (None: unknown)."""
        with self._control_lock:
            self.send(b"Q")
            answer = self._until(b"q", deadline).strip()
        count = int(answer) if answer.lstrip(b"-").isdigit() and len(answer) <= 12 else -1
        return count if count >= 0 else None

    def _listing(
        self,
        kind: bytes,
        roots: Sequence[str],
        deadline: float,
        cap: int | None,
        entries: int | None,
    ) -> Manifest:
        """The keeper's listing, read to its end (``M``) whatever it holds.

        Over the cap is a structured answer of the keeper (``M`` saying ``over``), or
        more bytes than the cap counted here; either way the rest is read and dropped,
        so that the link stays in step, and `ExportTooLarge` says so. Only the keeper
        ending (`SandboxUnavailable`) or no answer in time (`ExecTimeout`) is a fault.
        """
        split = new_split()
        cap, entries = cap or self.listing_bytes, entries or self.listing_entries
        request = {
            "roots": list(roots),
            "split": split.encode(),
            "cap": cap,
            "entries": entries,
            "hashed": self.hashed,
        }
        data, over, _ = self._bounded(kind, b"m", request, deadline)
        if over:
            raise ExportTooLarge(_too_large(roots, over))
        return parse_manifest(data, split)

    def _bounded(
        self, kind: bytes, part: bytes, request: dict[str, Any], deadline: float
    ) -> tuple[bytes, str, bytes]:
        """Send a request whose answer is ``part`` frames ended by ``part.upper()``.

        Returns the answer's bytes, what was over its ``request["cap"]`` ('' if
        nothing): the keeper's word (the end saying ``over``), or more bytes than the cap
        counted here, and the end's payload. Either way the answer is read to its end,
        so the link stays in step.
        """
        data, over, cap, end = bytearray(), "", request["cap"], part.upper()
        with self._control_lock:
            self.send(kind, marshal.dumps(request))
            while True:
                got, payload = self._control_frame(deadline)
                if got == part:
                    if not over and len(data) + len(payload) > cap:
                        over = f"bytes {cap}"
                    if over:
                        data.clear()
                    else:
                        data += payload
                elif got == end:
                    return bytes(data), over or _over(payload), payload

    def _control_frame(self, deadline: float) -> tuple[bytes, bytes]:
        """The next frame of a control answer (listing, archive, freeze, OOM count).

        Control answers carry no request id: once one is given up on (a timeout), its
        late frames would be read as the next request's. So the control line is out of
        step from then on, and every later control request is refused
        (`SandboxUnavailable`) rather than answered with another request's frames.
        """
        if self._desync:
            raise self._gone(self._desync)
        try:
            self._wait(lambda: bool(self._control), deadline)
        except TimeoutError as exc:
            self._desync = "an earlier answer timed out, its frames may still come"
            raise ExecTimeout(
                f"the keeper of container {self.container_id[:12]} did not answer in time"
            ) from exc
        with self._cond:
            return self._control.popleft()

    def _until(self, kind: bytes, deadline: float) -> bytes:
        while True:
            got, payload = self._control_frame(deadline)
            if got == kind:
                return payload


class KeeperShell:
    """The persistent shell's line to the keeper: what `Shell` reads and writes through."""

    def __init__(self, link: KeeperLink) -> None:
        self.link = link

    @property
    def eof(self) -> bool:
        """The shell ended and everything it wrote has been read."""
        return self.link.shell_ended and not self.link.shell_frames

    def send(self, data: bytes) -> None:
        """Input for the shell."""
        self.link.send(b"I", data)

    def frames(self, deadline: float) -> list[tuple[int, bytes]]:
        """The shell's output frames available, waiting for some until the deadline.

        Raises:
            TimeoutError: nothing arrived before the deadline.
        """
        return self.link.shell_output(deadline)

    def exit_code(self) -> int | None:
        """The shell's exit status, once it ended."""
        return self.link.shell_end

    def close(self) -> None:
        """Nothing to close: the shell lives until it is killed or its container ends."""


def _status(payload: bytes) -> int | None:
    """An exit status the keeper sent (its decimal text), or None when it is not one."""
    text = payload.strip()
    return int(text) if text.isdigit() and len(text) <= 9 else None


def _over(payload: bytes) -> str:
    """What a listing's end says was over its cap (``bytes N``, ``entries N``), or ''."""
    if not payload.startswith(b"over"):
        return ""
    return payload[4:].decode("ascii", errors="replace").strip()[:80] or "the cap"


def _too_large(roots: Sequence[str], over: str) -> str:
    what, _, limit = over.partition(" ")
    unit = {
        "bytes": "bytes of listing",
        "entries": "entries",
        "hashed": "bytes of files to read for their hashes",
    }.get(what, what)
    return (
        f"the files left in {', '.join(roots)} are over the listing cap "
        f"({limit} {unit}); they were not listed, so nothing of them can be graded"
    )
