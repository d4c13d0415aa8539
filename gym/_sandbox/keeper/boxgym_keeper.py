"""The keeper: an agent container's main process, the harness's hand inside it.

Started with the agent's uid and gid as pid 1 of the container by a one-line boot
(``python3 -I -S -c``) that reads this file from standard input, compiled by the
harness's Python (run as is where the magic numbers match) and as source; its standard
input and output are attached to the harness (the container's link: at end of input it
exits, and the engine removes the container). It runs, for the harness, without a
``docker exec`` each:

- the agent's persistent shell (a child whose input and output it relays);
- harness commands (archives of files, listings), one at a time;
- a tar of the writable mounts (a fork's copy of them), made in this process;
- the freeze at an episode's end: it kills every process of its uid itself, then lists
  and hashes the writable mounts in this process, with no agent process left;
- the count of kills by the memory limit.

The agent cannot reach it, although it shares its uid: it is non-dumpable (no
``ptrace``, no ``/proc/1/mem``, ``fd``, ``environ``), and as the namespace's init it only
receives signals it handles (none but SIGCHLD, which only makes it reap). It reaps every
orphan. Standard library only, Python 3.6 and later.

Frames both ways: one byte of kind, four bytes of length (big-endian), the payload.
From the harness (requests are ``marshal``'d dicts: the harness is trusted, and marshal
costs no import):

- ``S`` start the shell (argv, env, cwd); ``I`` input for it; ``W`` the harness read this
  many bytes of its output (four bytes);
- ``R`` run a command (four bytes of its id, four of request length, the request: argv,
  env, cwd; then its input);
- ``K`` kill; ``F`` freeze (roots, split, cap, entries, hashed); ``N`` list and hash (the
  same);
  ``Q`` the memory limit's kills; ``A`` archive (base, roots, cap).

To the harness: ``r`` ready; ``o``/``e`` the shell's output, ``x`` it ended (its status);
``O``/``E`` a command's output, ``X`` it ended (its status), each after the command's id;
``k`` killed; ``m``/``M`` a listing's bytes and its end; ``q`` the count; ``a``/``A`` an
archive's bytes and its end.

A listing stops where it would pass the harness's cap (``cap`` bytes sent, ``entries``
entries, ``hashed`` bytes of files to read for their hashes, summed before any is read):
its end is then ``M`` with the payload ``over``, what was over and the limit, an answer
distinct from the keeper (or the container) ending. What the agent left is then too
large to list; that is the agent's doing, never the harness's fault. An archive stops
the same way past its ``cap`` bytes (``A`` with ``over``).
"""

import _signal as signal  # the module without its enums: a keeper starts in every episode
import errno
import fcntl
import marshal
import os
import select
import stat
import struct
import sys
import time

_KINDS = {
    stat.S_IFREG: b"f",
    stat.S_IFDIR: b"d",
    stat.S_IFLNK: b"l",
    stat.S_IFIFO: b"p",
    stat.S_IFSOCK: b"s",
    stat.S_IFCHR: b"c",
    stat.S_IFBLK: b"b",
}
_OOM_FILES = ("/sys/fs/cgroup/memory/memory.oom_control", "/sys/fs/cgroup/memory.events")
HASH_LIMIT = 64 << 20
"""Larger files are listed without a hash (a changed one then shows as changed): a sparse
file of a terabyte must not hold the freeze for hours."""
BACKLOG = 1 << 20
"""Bytes waiting for the harness past which the children's output is left in their pipes
(they block, as they would writing to a ``docker exec``'s stream)."""
F_GETPIPE_SZ = 1032
"""``fcntl``'s query of a pipe's size (Linux, every architecture)."""
WINDOW = 1 << 20
"""Bytes of the shell's output sent that the harness has not read yet, at most: between
the agent's commands nobody reads them, and a background job writing without end blocks,
as it would on an exec's stream (the harness grants more, ``W``, as it reads)."""


def _nonblocking(fd):
    os.set_blocking(fd, False)
    return fd


class Child:
    """A process of the keeper's: its pid, the pipes to it, and its end."""

    def __init__(self, request, stdin, kinds, tag=b""):
        self.kinds = kinds  # (stdout kind, stderr kind, end kind)
        self.tag = tag  # prefixes each of its frames (a command's id)
        self.pending = bytearray(stdin)
        self.closing = not stdin and kinds[2:3] == b"X"
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        argv = request["argv"]
        self.pid = os.fork()
        if self.pid == 0:
            try:
                os.setsid()
                os.dup2(in_r, 0)
                os.dup2(out_w, 1)
                os.dup2(err_w, 2)
                os.closerange(3, 1 << 16)
                # only now, holding nothing of the keeper's: its own /proc files (the
                # program it runs is dumpable or not by its own right)
                dumpable(1)
                with open("/proc/self/oom_score_adj", "w") as adj:
                    adj.write("1000")  # the memory limit takes the agent's, never the keeper
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                signal.signal(signal.SIGPIPE, signal.SIG_DFL)
                os.chdir(request.get("cwd") or "/")
                env = dict(os.environ)  # the container's, as a docker exec would have
                env.update(request.get("env") or {})
                os.execvpe(argv[0], argv, env)
            except BaseException as exc:
                os.write(2, f"boxgym keeper: cannot run {argv!r}: {exc}\n".encode())
            os._exit(127)
        for fd in (in_r, out_w, err_w):
            os.close(fd)
        self.stdin = _nonblocking(in_w)
        self.out = {_nonblocking(out_r): kinds[0:1], _nonblocking(err_r): kinds[1:2]}
        self.status = None
        if self.closing:
            self.close_input()

    def close_input(self):
        if self.stdin is not None:
            os.close(self.stdin)
            self.stdin = None

    def ended(self):
        return self.status is not None


class Keeper:
    """The loop: frames from the harness, output of the children, reaping."""

    def __init__(self):
        self.uid = os.getuid()
        self.inbuf = bytearray()
        self.outbuf = bytearray()
        self.shell = None
        self.credit = WINDOW  # bytes of shell output the harness will take now
        self.commands = {}  # id (4 bytes) -> Child
        self.wake_r, wake_w = os.pipe()
        _nonblocking(self.wake_r)
        signal.set_wakeup_fd(_nonblocking(wake_w))
        signal.signal(signal.SIGCHLD, lambda *_: None)
        os.set_blocking(1, False)

    # -- frames ---------------------------------------------------------------------------

    def send(self, kind, payload=b""):
        self.outbuf += kind + struct.pack(">I", len(payload)) + payload

    def flush(self, block=False):
        while self.outbuf:
            try:
                sent = os.write(1, self.outbuf)
            except BlockingIOError:
                if not block:
                    return
                select.select([], [1], [], 1.0)
                continue
            except BrokenPipeError:
                os._exit(0)
            del self.outbuf[:sent]

    def frames(self):
        while len(self.inbuf) >= 5:
            (size,) = struct.unpack(">I", self.inbuf[1:5])
            if len(self.inbuf) < 5 + size:
                return
            kind, payload = bytes(self.inbuf[:1]), bytes(self.inbuf[5 : 5 + size])
            del self.inbuf[: 5 + size]
            yield kind, payload

    # -- requests ---------------------------------------------------------------------------

    def handle(self, kind, payload):
        if kind == b"I":
            if self.shell is not None and self.shell.stdin is not None:
                self.shell.pending += payload
        elif kind == b"W":
            self.credit = min(WINDOW, self.credit + struct.unpack(">I", payload)[0])
        elif kind == b"S":
            if self.shell is None or self.shell.ended():
                self.credit = WINDOW
                self.shell = self.spawn(marshal.loads(payload), b"", b"oex")
        elif kind == b"R":
            tag, (size,) = payload[:4], struct.unpack(">I", payload[4:8])
            request = marshal.loads(payload[8 : 8 + size])
            child = self.spawn(request, payload[8 + size :], b"OEX", tag)
            if child is not None:
                self.commands[tag] = child
        elif kind == b"K":
            self.kill_all()
            self.send(b"k")
        elif kind == b"F":
            self.kill_all()
            self.listing(marshal.loads(payload))
        elif kind == b"N":
            self.listing(marshal.loads(payload))
        elif kind == b"Q":
            self.send(b"q", str(oom_kills()).encode())
        elif kind == b"A":
            self.archive(marshal.loads(payload))

    def spawn(self, request, stdin, kinds, tag=b""):
        try:
            return Child(request, stdin, kinds, tag)
        except OSError as exc:  # no process left (a fork bomb): the harness sees it end
            self.send(kinds[1:2], tag + f"boxgym keeper: cannot start: {exc}\n".encode())
            self.send(kinds[2:3], tag + b"-1")
            return None

    def children(self):
        return ([self.shell] if self.shell is not None else []) + list(self.commands.values())

    # -- the freeze ---------------------------------------------------------------------------

    def kill_all(self):
        """Kill every process of this uid but this one, until none is left."""
        for _ in range(2000):
            try:
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
            self.reap()
            if not self.others():
                break
            time.sleep(0.001)
        self.reap()
        for child in self.children():
            self.drain(child)
            self.finish(child)

    def others(self):
        found = False
        me = os.getpid()
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == me:
                continue
            try:
                with open(f"/proc/{entry}/status") as fh:
                    fields = dict(line.split(":", 1) for line in fh if ":" in line)
            except (OSError, ValueError):
                continue
            uid = int(fields.get("Uid", "-1").split()[0])
            if uid == self.uid and not fields.get("State", "").strip().startswith("Z"):
                found = True
        return found

    def listing(self, request):
        """List and hash the roots as gym/_sandbox/_manifest.py's script does.

        That is: ``find -xdev -printf`` of type, mode, size and path, the split, then
        ``sha256sum -z`` of the readable regular files; within the request's ``cap``
        (bytes) and ``entries``, else it stops and its end says ``over``. So is the
        reading bounded before it begins: each file (each inode: the names of a file
        share its one digest) counts at its length, what reading it costs even when it is
        sparse, and past the request's ``hashed`` bytes nothing is read (``over``).
        """
        import hashlib  # only here: a freeze is once per episode

        out = Listing(self, request.get("cap"), request.get("entries"))
        hashed = request.get("hashed")
        files = []
        try:
            for root in request["roots"]:
                self.walk(os.fsencode(root), files, out)
            out.add(request["split"] + b"\0")
            sizes = {}  # (device, inode) -> length
            for _, info in files:
                key = (info.st_dev, info.st_ino)
                sizes[key] = max(sizes.get(key, 0), info.st_size)
            if isinstance(hashed, int) and hashed > 0 and sum(sizes.values()) > hashed:
                raise Over(b"hashed %d" % hashed)
            digests = {}  # (device, inode) -> its digest (None: unreadable), read once
            for path, info in files:
                key = (info.st_dev, info.st_ino)
                if key not in digests:
                    digests[key] = file_hash(hashlib, path, info)
                if digests[key] is not None:
                    out.add(digests[key].encode() + b"  " + path + b"\0")
        except Over as over:
            self.send(b"M", b"over " + over.args[0])
            return
        out.spill(force=True)
        self.send(b"M")

    def walk(self, top, files, out):
        """Every entry under top, on its filesystem, never through a link (`tree`)."""
        for path, info in tree(top):
            kind = _KINDS.get(stat.S_IFMT(info.st_mode), b"?")
            mode = f"{stat.S_IMODE(info.st_mode):o}".encode()
            out.add(b"%s %s %d %s\0" % (kind, mode, info.st_size, path), entry=True)
            if kind == b"f" and info.st_size <= HASH_LIMIT:
                files.append((path, info))

    def archive(self, request):
        """A tar of what is under the roots, as ``tar -c`` run as this uid would make it.

        The roots are folders under ``base``; entries are named relative to it (the roots
        themselves are not entries). Links are never followed; a file this uid cannot
        read is left out (``--ignore-failed-read``); sockets and devices are left out.
        Sent in ``a`` frames, ended by ``A``; past ``cap`` bytes or ``entries`` entries
        (each entry walked, one left out too) it stops and ``A`` says ``over``; where
        this uid could not read a file, a folder's list or a link, ``A`` says ``unread``
        and how many (the archive is not the state). No process is started: a fork's
        copy costs one round trip.
        """
        out = Listing(self, request.get("cap"), request.get("entries"), b"a")
        base = os.fsencode(request["base"]).rstrip(b"/") + b"/"
        links = {}  # (device, inode) -> the name of a file with several links, once sent
        unread = []  # what this uid could not read: a file, a folder's list, a link
        try:
            for root in request["roots"]:
                for path, info in tree(os.path.join(base, os.fsencode(root)), unread):
                    out.add(b"", entry=True)  # every entry counts, one left out too
                    if stat.S_ISREG(info.st_mode) and info.st_size > out.room():
                        raise Over(b"bytes %d" % out.cap)  # before it is read
                    for piece in tar_entry(path, path[len(base) :], info, links, unread):
                        out.add(piece)
            out.add(bytes(1024))
        except Over as over:
            self.send(b"A", b"over " + over.args[0])
            return
        out.spill(force=True)
        self.send(b"A", b"unread %d" % len(unread) if unread else b"")

    # -- children ---------------------------------------------------------------------------

    def reap(self):
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            for child in self.children():
                if child.pid == pid:
                    child.status = exit_code(status)

    def drain(self, child):
        """Relay what the child's pipes hold, up to the backlog and the shell's window.

        A fast writer then waits, as it would on an exec's stream.
        """
        shell = child is self.shell
        for fd, kind in list(child.out.items()):
            while len(self.outbuf) < BACKLOG and (self.credit > 0 or not shell):
                try:
                    data = os.read(fd, min(1 << 16, self.credit) if shell else 1 << 16)
                except BlockingIOError:
                    break
                except OSError:
                    data = b""
                if not data:
                    os.close(fd)
                    del child.out[fd]
                    break
                if shell:
                    self.credit -= len(data)
                self.send(kind, child.tag + data)

    def finish(self, child):
        """Report a child that ended, after all it wrote; forget it.

        Its end says that its output is whole (a harness command's output is data: an
        archive, a file). So what its pipes hold is relayed first, past the backlog and
        the shell's window: at most a pipe's size each, where all it wrote before it
        ended is. A process it left behind is not waited for; what that writes later is
        not relayed.
        """
        if not child.ended():
            return
        for fd, kind in child.out.items():
            self.relay_rest(fd, kind, child.tag)
        child.close_input()
        for fd in child.out:
            os.close(fd)
        child.out = {}
        self.send(child.kinds[2:3], child.tag + str(child.status).encode())
        if child is self.shell:
            self.shell = None
        else:
            self.commands.pop(child.tag, None)

    def relay_rest(self, fd, kind, tag):
        """Relay what a pipe holds now, at most its size (its writer ended)."""
        try:
            left = fcntl.fcntl(fd, F_GETPIPE_SZ)
        except OSError:
            left = 1 << 20  # the most an unprivileged process may make a pipe hold
        while left > 0:
            try:
                data = os.read(fd, min(left, 1 << 16))
            except OSError:  # empty for now (BlockingIOError), or gone
                return
            if not data:
                return
            left -= len(data)
            self.send(kind, tag + data)

    def write_input(self, child):
        try:
            sent = os.write(child.stdin, child.pending)
        except BlockingIOError:
            return
        except OSError:
            child.pending.clear()
            child.close_input()
            return
        del child.pending[:sent]
        if not child.pending and child.kinds[2:3] == b"X":
            child.close_input()

    # -- the loop ---------------------------------------------------------------------------

    def run(self):
        self.send(b"r")
        while True:
            children = self.children()
            reads = [0, self.wake_r]
            if len(self.outbuf) < BACKLOG:
                reads += [fd for c in self.commands.values() for fd in c.out]
                if self.shell is not None and self.credit > 0:
                    reads += list(self.shell.out)
            writes = [c.stdin for c in children if c.stdin is not None and c.pending]
            if self.outbuf:
                writes.append(1)
            try:
                readable, writable, _ = select.select(reads, writes, [], 1.0)
            except InterruptedError:
                continue
            if 1 in writable:
                self.flush()
            for child in children:
                if child.stdin is not None and child.stdin in writable:
                    self.write_input(child)
            if self.wake_r in readable:
                try:
                    os.read(self.wake_r, 512)
                except OSError:
                    pass
            self.reap()
            for child in children:
                if any(fd in readable for fd in child.out):
                    self.drain(child)
                self.finish(child)
            if 0 in readable:
                data = os.read(0, 1 << 16)
                if not data:
                    return  # the harness let go: the container ends
                self.inbuf += data
                for kind, payload in self.frames():
                    self.handle(kind, payload)
            self.flush()


class Over(Exception):
    """A listing would pass its cap: the walk stops there (args: what, and the limit)."""


class Listing:
    """A listing's bytes (or an archive's: ``kind``) to the harness, in ~1 MiB frames.

    Sent as they come (the keeper never holds much), until ``cap`` bytes or ``entries``
    entries would be passed: `add` then raises `Over`.
    """

    def __init__(self, keeper, cap, entries, kind=b"m"):
        self.keeper = keeper
        self.kind = kind
        self.cap = cap if isinstance(cap, int) and cap > 0 else 1 << 62
        self.entries = entries if isinstance(entries, int) and entries > 0 else 1 << 62
        self.chunk = bytearray()
        self.sent = 0
        self.count = 0

    def add(self, record, entry=False):
        if entry:
            self.count += 1
            if self.count > self.entries:
                raise Over(b"entries %d" % self.entries)
        if self.sent + len(self.chunk) + len(record) > self.cap:
            raise Over(b"bytes %d" % self.cap)
        self.chunk += record
        self.spill()

    def room(self):
        """Bytes that may still be added."""
        return self.cap - self.sent - len(self.chunk)

    def spill(self, force=False):
        if len(self.chunk) >= 1 << 20 or (force and self.chunk):
            self.keeper.send(self.kind, bytes(self.chunk))
            self.sent += len(self.chunk)
            self.chunk.clear()
            self.keeper.flush(block=True)


def tree(top, unread=None):
    """(path, lstat) of everything under top, folders before what they hold.

    Never through a link, never onto another filesystem, without recursion. A folder
    this uid may not list, or an entry it may not stat, is added to ``unread`` if given
    (one that vanished as it was walked is not).
    """
    try:
        device = os.lstat(top).st_dev
    except OSError:
        return
    folders = [top]
    while folders:
        folder = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            refused(exc, folder, unread)
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError as exc:
                refused(exc, entry.path, unread)
                continue
            yield entry.path, info
            if stat.S_ISDIR(info.st_mode) and info.st_dev == device:
                folders.append(entry.path)


_TAR_TYPES = {stat.S_IFREG: b"0", stat.S_IFDIR: b"5", stat.S_IFLNK: b"2", stat.S_IFIFO: b"6"}


def refused(exc, path, unread):
    """Add ``path`` to ``unread`` (if given) when ``exc`` says this uid may not read it.

    Or that its path is past what the kernel names (a folder nested that deep). A file
    or folder gone since it was listed is passed over. Out of descriptors is the
    keeper's own fault (nothing of the agent's can lower its limit: the seccomp profile),
    never a reason to leave files out: it is raised.
    """
    if exc.errno in (errno.EMFILE, errno.ENFILE):
        raise exc
    if unread is not None and exc.errno in (errno.EACCES, errno.EPERM, errno.ENAMETOOLONG):
        unread.append(path)  # one the agent made too long to name is as unread


def tar_entry(path, name, info, links, unread):
    """The pieces of one member of a GNU tar: its header, then its contents.

    Contents come in blocks of at most 1 MiB; nothing for what is left out (a socket, a
    device), nor for what this uid cannot read (added to ``unread``).
    """
    kind = _TAR_TYPES.get(stat.S_IFMT(info.st_mode))
    target, fd = b"", None
    if kind == b"2":
        try:
            target = os.readlink(path)
        except OSError as exc:
            refused(exc, path, unread)
            return
    elif kind == b"5":
        name += b"/"
    elif kind == b"0":
        key = (info.st_dev, info.st_ino)
        if info.st_nlink > 1 and key in links:
            kind, target = b"1", links[key]
        else:
            fd = open_regular(path, info)
            if fd is None:
                if same_file(path, info):
                    unread.append(path)  # there as listed, not read: refused, or leased
                return
            if info.st_nlink > 1:
                links[key] = name
    elif kind is None:
        return
    size = info.st_size if fd is not None else 0
    try:
        if len(name) > 100:
            yield tar_long(b"L", name)
        if len(target) > 100:
            yield tar_long(b"K", target)
        yield tar_header(name, kind, info.st_mode, size, info.st_mtime, target)
        if fd is not None:
            yield from contents(fd, size)
    finally:
        if fd is not None:
            os.close(fd)


def contents(fd, size):
    """``size`` bytes of a file, then the padding to a whole block.

    A file that grew since it was listed is cut there, one that shrank is padded with
    zeros (as ``tar`` does), in pieces of at most 1 MiB like its blocks: each piece is
    one frame to the host, which takes a frame over its limit for a keeper gone wrong
    (before: one piece of the missing bytes, and an agent truncating a file of 100 MiB
    while a fork read it made the fork, and its parent, infra errors).
    """
    left = size
    while left > 0:
        try:
            block = os.read(fd, min(left, 1 << 20))
        except OSError:
            block = b""
        if not block:
            break
        left -= len(block)
        yield block
    left += -size % 512
    while left > 0:
        piece = min(left, 1 << 20)
        left -= piece
        yield bytes(piece)


def tar_long(kind, value):
    """A GNU long name (``L``) or long link target (``K``) record."""
    value += b"\0"
    header = tar_header(b"././@LongLink", kind, 0, len(value), 0, b"")
    return header + value + bytes(-len(value) % 512)


def tar_header(name, kind, mode, size, mtime, target):
    """A 512-byte GNU tar header (names and targets cut at 100 bytes: see `tar_long`)."""
    mtime = min(max(int(mtime), 0), 0o77777777777)
    fields = (
        name[:100],
        b"%07o\0" % stat.S_IMODE(mode),
        b"%07o\0" % os.getuid(),
        b"%07o\0" % os.getgid(),
        b"%011o\0" % size,
        b"%011o\0" % mtime,
        b" " * 8,
        kind,
        target[:100],
        b"ustar  \0",
    )
    header = bytearray(struct.pack("100s8s8s8s12s12s8s1s100s8s", *fields).ljust(512, b"\0"))
    header[148:156] = b"%06o\0 " % sum(header)
    return bytes(header)


def same_file(path, info):
    """Whether ``path`` is still the file listed (not gone, not replaced)."""
    try:
        now = os.lstat(path)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino)


def open_regular(path, info):
    """A descriptor of the regular file listed, if this uid can read it; else None.

    Never through a link, never blocking (a fifo put in its place is not opened for long).
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        now = os.fstat(fd)
        if stat.S_ISREG(now.st_mode) and (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def exit_code(status):
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def file_hash(hashlib, path, info):
    """The sha256 of a regular file this uid can read, never through a link; else None."""
    fd = open_regular(path, info)
    if fd is None:
        return None
    try:
        digest = hashlib.sha256()
        while True:
            block = os.read(fd, 1 << 20)
            if not block:
                return digest.hexdigest()
            digest.update(block)
    except OSError:
        return None
    finally:
        os.close(fd)


def oom_kills():
    for path in _OOM_FILES:
        try:
            with open(path) as fh:
                for line in fh:
                    if line.startswith("oom_kill "):
                        return int(line.split()[1])
        except (OSError, ValueError):
            continue
    return -1


def _prctl():
    """The C library's ``prctl`` through ``_ctypes`` alone (``ctypes`` takes ms to import)."""
    import _ctypes

    class Int(_ctypes._SimpleCData):
        _type_ = "i"

    class Function(_ctypes.CFuncPtr):
        _flags_ = _ctypes.FUNCFLAG_CDECL
        _restype_ = Int

    class Libc:
        _handle = _ctypes.dlopen(None, 0)

    return Function(("prctl", Libc()))


def dumpable(flag):
    """``prctl(PR_SET_DUMPABLE, flag)``: 0 keeps the agent (same uid) out of this process."""
    global PRCTL
    if PRCTL is None:
        PRCTL = _prctl()
    if PRCTL(4, flag, 0, 0, 0) != 0:
        raise OSError("prctl(PR_SET_DUMPABLE) failed")


PRCTL = None


def main():
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as init: undeliverable from inside
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    try:
        dumpable(0)
    except Exception as exc:  # no ctypes: refuse to run rather than run reachable
        sys.stderr.write(f"boxgym keeper: cannot make itself non-dumpable: {exc}\n")
        sys.exit(3)
    sys.stdin = sys.stdout = None
    Keeper().run()


main()
