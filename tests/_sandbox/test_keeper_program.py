"""The keeper program alone (gym/_sandbox/keeper/boxgym_keeper.py), run here over pipes.

What it relays does not need a container: its loop, its backlog and the order of its
frames are the same on this machine, where the link's capacity can be set small so
that a full backlog is certain rather than a matter of timing.
"""

from __future__ import annotations

import fcntl
import marshal
import os
import select
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gym._sandbox import _keeper

KEEPER = Path(_keeper.__file__).parent / "keeper" / "boxgym_keeper.py"
F_SETPIPE_SZ = 1031


class Link:
    """The harness's end: requests in, frames out, read only when the test says so."""

    def __init__(self) -> None:
        in_r, self.to_keeper = os.pipe()
        self.from_keeper, out_w = os.pipe()
        fcntl.fcntl(out_w, F_SETPIPE_SZ, 4096)  # the link holds a page: the backlog fills
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(KEEPER)], stdin=in_r, stdout=out_w
        )
        os.close(in_r)
        os.close(out_w)
        self.buf = b""

    def run(self, tag: int, argv: list[str]) -> None:
        request = marshal.dumps({"argv": argv, "env": {}, "cwd": "/"})
        payload = struct.pack(">II", tag, len(request)) + request
        os.write(self.to_keeper, b"R" + struct.pack(">I", len(payload)) + payload)

    def frame(self, timeout: float = 30.0) -> tuple[bytes, bytes]:
        deadline = time.monotonic() + timeout
        while len(self.buf) < 5 or len(self.buf) < 5 + struct.unpack(">I", self.buf[1:5])[0]:
            ready, _, _ = select.select([self.from_keeper], [], [], deadline - time.monotonic())
            assert ready, "no frame from the keeper in time"
            data = os.read(self.from_keeper, 1 << 16)
            assert data, "the keeper ended"
            self.buf += data
        size = struct.unpack(">I", self.buf[1:5])[0]
        kind, payload, self.buf = self.buf[:1], self.buf[5 : 5 + size], self.buf[5 + size :]
        return kind, payload

    def close(self) -> None:
        os.close(self.to_keeper)  # the harness lets go: the keeper ends
        self.proc.wait(10)
        os.close(self.from_keeper)


@pytest.fixture
def link() -> Iterator[Link]:
    opened = Link()
    try:
        assert opened.frame() == (b"r", b"")
        yield opened
    finally:
        opened.close()


def test_a_command_that_ends_while_the_backlog_is_full_ends_after_all_it_wrote(link):
    """A harness command's output is data (an archive, a file): its end must say that it
    is whole. One command fills the backlog and waits on its pipe; another writes a little
    and ends meanwhile, its output still in its pipe. Its end comes after that output,
    not instead of it (an export read as a tar cut short was this)."""
    big, small = 3 << 20, 5000
    link.run(1, ["sh", "-c", f"head -c {big} /dev/zero"])
    time.sleep(0.5)  # nobody reads: the link's page, then the keeper's backlog, fill
    link.run(2, ["sh", "-c", f"head -c {small} /dev/zero"])
    time.sleep(0.5)  # the small one ends, its output in its pipe, the backlog still full
    got = {1: 0, 2: 0}
    ends: dict[int, bytes] = {}
    while len(ends) < 2:
        kind, payload = link.frame()
        tag = struct.unpack(">I", payload[:4])[0]
        if kind == b"O":
            assert tag not in ends, f"command {tag} wrote after its end"
            got[tag] += len(payload) - 4
        elif kind == b"X":
            ends[tag] = payload[4:]
    assert ends == {1: b"0", 2: b"0"}
    assert got == {1: big, 2: small}


def test_a_process_left_behind_writing_without_end_does_not_hold_the_end(link):
    """What a command's pipes held when it ended is relayed, not what a process it left
    behind goes on writing: the end comes at once."""
    link.run(7, ["sh", "-c", "(yes left-behind &); echo mine"])
    out, start = b"", time.monotonic()
    while True:
        kind, payload = link.frame(timeout=10)
        if kind == b"X":
            break
        out += payload[4:]
    assert payload == struct.pack(">I", 7) + b"0"
    assert b"mine" in out.split(b"\n") and time.monotonic() - start < 5


def test_a_walk_out_of_descriptors_raises_rather_than_leave_files_out(tmp_path: Path) -> None:
    """The keeper's walk (exports, listings, forks) with no descriptor left: before, each
    folder it could not open was passed over, and a fork's branch got an empty workspace
    (found by a red-team helper, with the keeper's limit lowered by the agent). Out of
    descriptors is the keeper's own fault: it raises."""
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "file").write_text("x")
    said = _keeper_run(
        "import resource\n"
        "hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (3, hard))\n"
        "try:\n"
        "    print(len(list(tree(sys.argv[1], []))))\n"
        "except OSError as exc:\n"
        "    print('raised', errno.errorcode[exc.errno])\n",
        tmp_path,
    )
    assert said == ["raised", "EMFILE"]


def _keeper_run(code: str, top: Path) -> list[str]:
    """The words ``code`` prints, run after the keeper's functions (not its main loop) in
    a process of its own, with ``top`` as its argument."""
    program = KEEPER.read_text().rsplit("main()", 1)[0] + code
    said = subprocess.run(
        [sys.executable, "-I", "-S", "-c", program, str(top)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return said.split()


def _walked(top: Path) -> list[str]:
    """What the keeper's archive of ``top`` left unread."""
    return _keeper_run(
        "unread = []\n"
        "for path, info in tree(sys.argv[1], unread):\n"
        "    for piece in tar_entry(path, path.encode(), info, {}, unread):\n"
        "        pass\n"
        "print('\\n'.join(unread))\n",
        top,
    )


def test_a_folder_nested_past_what_the_kernel_names_is_unread_not_left_out(
    tmp_path: Path,
) -> None:
    """A fork's branch must hold the parent's files or be refused: a file under a path
    longer than 4096 bytes was passed over (helper C), so the branch lacked it."""
    here = os.open(tmp_path, os.O_RDONLY)
    for _ in range(25):
        os.mkdir("d" * 200, dir_fd=here)
        inner = os.open("d" * 200, os.O_RDONLY, dir_fd=here)
        os.close(here)
        here = inner
    os.close(os.open("kept.txt", os.O_CREAT | os.O_WRONLY, dir_fd=here))
    os.close(here)
    assert _walked(tmp_path), "the deep folder is counted unread"


def test_a_file_there_but_not_opened_is_unread_not_left_out(tmp_path: Path) -> None:
    """A file under a write lease another process holds cannot be opened without waiting;
    it is still the file listed, so it is unread (before: passed over, helper C)."""
    (tmp_path / "leased.txt").write_text("x")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, signal, sys, time\n"
            "signal.signal(signal.SIGIO, signal.SIG_IGN)\n"
            "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
            "fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)\n"
            "print('held', flush=True)\n"
            "time.sleep(60)\n",
            str(tmp_path / "leased.txt"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    with holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            assert _walked(tmp_path) == [str(tmp_path / "leased.txt")]
        finally:
            holder.kill()


def test_a_file_that_shrank_is_padded_in_pieces_each_one_frame(tmp_path: Path) -> None:
    """A file listed at 40 MiB that holds 3 bytes when read: the padding is 40 MiB of
    zeros, sent in pieces no larger than the file's own blocks (1 MiB). Before: one piece,
    over the host's frame limit, and the keeper read as gone (helper E: a fork while the
    agent truncated a file became an infra error, its parent's too)."""
    (tmp_path / "shrunk").write_bytes(b"abc")
    said = _keeper_run(
        "fd = os.open(os.path.join(sys.argv[1], 'shrunk'), os.O_RDONLY)\n"
        "pieces = [len(p) for p in contents(fd, 40 << 20)]\n"
        "print(sum(pieces), max(pieces))\n",
        tmp_path,
    )
    assert said == [str(40 << 20), str(1 << 20)]
