"""List and hash a folder tree as plain JSON: the manifest a file-tree grader compares.

Run by the harness inside a container, from its own text (``python3 -I -c SOURCE``),
never from a file the agent could have changed, once no process of the agent is left:

    python3 -I -c SOURCE ROOT MAX_ENTRIES MAX_DEPTH MAX_BYTES MAX_LISTING

It prints one JSON object (ASCII only) on standard output:

- ``entries``: one ``[path, type, mode, size, sha256, target, xattrs]`` list for ROOT
  itself (path ``.``, first) and per entry under it, in sorted order. ``path`` is
  relative to ROOT; ``type`` is ``file``, ``dir``, ``symlink``, ``fifo``, ``socket``,
  ``char`` or ``block``; ``mode`` the permission bits (setuid, setgid and sticky
  included); ``size`` and ``sha256`` a readable file's size and content hash, its
  content read as lines: a last line without its newline counts as if it had one (0
  and '' otherwise); ``target`` a symlink's target, read, never followed;
  ``xattrs`` the sha256 of the entry's extended attributes, names and values (POSIX
  ACLs among them), '' when it has none, ``unreadable`` when they cannot be read.
- ``odd``: ``[path, why]`` for each entry that is not a plain, readable file or folder
  with a plain name (a name that is not UTF-8 or holds control characters, a link, a
  fifo, a device, a setuid or setgid bit, a file with several names, an unreadable
  file or folder, a folder deeper than MAX_DEPTH). They are reported, never followed
  nor opened in a way that blocks.
- ``over``: '' or what was over its bound (``entries N``, ``bytes N`` or ``listing
  N``): the listing stopped there.

Bounds: at most MAX_ENTRIES entries and odd findings together, MAX_DEPTH levels of
folders, MAX_BYTES bytes of content and extended attributes hashed, MAX_LISTING bytes of
what it prints (counted as each entry and finding is kept: what it holds is bounded by
the tree's names too, not only by their number). Standard library only, Python 3.6 or
later.
"""

import errno
import hashlib
import json
import os
import stat
import sys

KINDS = {
    stat.S_IFREG: "file",
    stat.S_IFDIR: "dir",
    stat.S_IFLNK: "symlink",
    stat.S_IFIFO: "fifo",
    stat.S_IFSOCK: "socket",
    stat.S_IFCHR: "char",
    stat.S_IFBLK: "block",
}
CHUNK = 1 << 20
NO_XATTRS = {errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENODATA}
"""What listing extended attributes says where a file system keeps none."""


class Over(Exception):
    """A bound was reached: the listing stops."""


class Odd(list):
    """The odd findings, each counted against the listing's bounds as it is kept."""

    def __init__(self, listing):
        super().__init__()
        self.listing = listing

    def append(self, finding):
        self.listing.count(finding)
        super().append(finding)


class Listing:
    """The state of one listing: what was found and what is left of the bounds."""

    def __init__(self, max_entries, max_depth, max_bytes, max_listing):
        self.entries = []
        self.odd = Odd(self)
        self.max_entries = max_entries
        self.max_depth = max_depth
        self.bytes_left = max_bytes
        self.max_bytes = max_bytes
        self.kept = 0
        self.printed = 64  # the object around the lists
        self.max_listing = max_listing

    def count(self, record):
        """Count one entry or finding against the bounds, before it is kept."""
        self.kept += 1
        if self.kept > self.max_entries:
            raise Over(f"entries {self.max_entries}")
        self.printed += len(json.dumps(record, ensure_ascii=True, separators=(",", ":"))) + 1
        if self.printed > self.max_listing:
            raise Over(f"listing {self.max_listing}")

    def add(self, entry):
        self.count(entry)
        self.entries.append(entry)


def text_of(raw):
    """A name as text, and why it is odd ('' when it is a plain UTF-8 name)."""
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "backslashreplace"), "name is not UTF-8 (shown escaped)"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return name, "name holds control characters"
    return name, ""


def digest(path, info, listing):
    """A regular file's size and sha256 as lines, read without following links or blocking.

    A file that does not end with a newline is hashed and sized as if it did: a last line
    written without one is the same line. ('', 0) if unreadable.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    flags |= getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return "", 0
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
            return "", 0
        h, size, last = hashlib.sha256(), 0, b"\n"
        while True:
            data = os.read(fd, CHUNK)
            if not data:
                if last != b"\n":
                    h.update(b"\n")
                    size += 1
                return h.hexdigest(), size
            listing.bytes_left -= len(data)
            if listing.bytes_left < 0:
                raise Over(f"bytes {listing.max_bytes}")
            h.update(data)
            size += len(data)
            last = data[-1:]
    except OSError:
        return "", 0
    finally:
        os.close(fd)


def xattrs_of(path, listing):
    """sha256 of a path's extended attributes, never following a link ('' when none)."""
    try:
        names = sorted(os.listxattr(path, follow_symlinks=False))
    except OSError as exc:
        return "" if exc.errno in NO_XATTRS else "unreadable"
    if not names:
        return ""
    h = hashlib.sha256()
    for name in names:
        try:
            value = os.getxattr(path, name, follow_symlinks=False)
        except OSError:
            return "unreadable"
        listing.bytes_left -= len(name) + len(value)
        if listing.bytes_left < 0:
            raise Over(f"bytes {listing.max_bytes}")
        for part in (name.encode("utf-8", "surrogateescape"), value):
            h.update(len(part).to_bytes(8, "big") + part)
    return h.hexdigest()


def entry_of(path, rel, info, listing):
    """The manifest entry of one path (its odd findings added to the listing)."""
    kind = KINDS.get(stat.S_IFMT(info.st_mode), "other")
    mode = stat.S_IMODE(info.st_mode)
    size, sha, target = 0, "", ""
    if kind == "file":
        sha, size = digest(path, info, listing)
        if not sha:
            listing.odd.append([rel, "unreadable file: its content cannot be compared"])
        if info.st_nlink > 1:
            listing.odd.append([rel, f"a file with {info.st_nlink} names (hard links)"])
    elif kind == "symlink":
        try:
            target, why = text_of(os.readlink(path))
        except OSError:
            target, why = "", "unreadable link"
        listing.odd.append([rel, "a symbolic link (never followed)" + (": " + why if why else "")])
    elif kind != "dir":
        listing.odd.append([rel, f"a {kind} (never opened)"])
    if mode & (stat.S_ISUID | stat.S_ISGID):
        listing.odd.append([rel, "setuid or setgid bit"])
    xattrs = xattrs_of(path, listing)
    if xattrs == "unreadable":
        listing.odd.append([rel, "unreadable extended attributes: they cannot be compared"])
    return [rel, kind, mode, size, sha, target, xattrs]


def walk(root, listing):
    """List root, then the tree under it in sorted order, within the bounds."""
    try:
        listing.add(entry_of(root, ".", os.lstat(root), listing))
    except OSError:
        listing.odd.append([".", "unreadable folder: not listed"])
        return
    stack = [(root, "", 0)]
    while stack:
        folder, prefix, depth = stack.pop()
        try:
            with os.scandir(folder) as it:
                names = sorted(e.name for e in it)
        except OSError:
            listing.odd.append([prefix.rstrip("/") or ".", "unreadable folder: not listed"])
            continue
        below = []
        for raw in names:
            path = os.path.join(folder, raw)
            name, why = text_of(raw)
            rel = prefix + name
            try:
                info = os.lstat(path)
            except OSError:
                listing.odd.append([rel, "vanished while listed"])
                continue
            if why:
                listing.odd.append([rel, why])
            listing.add(entry_of(path, rel, info, listing))
            if stat.S_ISDIR(info.st_mode):
                if depth + 1 >= listing.max_depth:
                    listing.odd.append([rel, f"deeper than {listing.max_depth} levels: not listed"])
                else:
                    below.append((path, rel + "/", depth + 1))
        stack.extend(reversed(below))


def main(argv):
    root = os.fsencode(argv[1])
    listing = Listing(int(argv[2]), int(argv[3]), int(argv[4]), int(argv[5]))
    over = ""
    try:
        walk(root, listing)
    except Over as exc:
        over = str(exc)
    out = {"entries": listing.entries, "odd": listing.odd, "over": over}
    sys.stdout.write(json.dumps(out, ensure_ascii=True, separators=(",", ":")))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
