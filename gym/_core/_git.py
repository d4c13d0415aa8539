"""A git repository holding exactly one commit, written without running git.

A code task's workspace starts as its project with one (base) commit. Running git to
make it costs several processes per task; the repository is small and its format
stable, so it is written here: loose objects (blobs, trees, the commit), the branch,
``HEAD``, ``config`` and an index (version 2) whose stat fields are zero, so git
re-reads each file once to see that nothing changed. The objects are the ones git
itself makes for the same files, author, date and message.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Mapping

__all__ = ["one_commit"]

CONFIG = (
    b"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
    b"\tlogallrefupdates = true\n"
)


def _object(kind: str, body: bytes, out: dict[str, bytes]) -> bytes:
    """Store a loose object; return its binary id."""
    raw = f"{kind} {len(body)}\0".encode() + body
    digest = hashlib.sha1(raw, usedforsecurity=False)
    hexid = digest.hexdigest()
    out[f".git/objects/{hexid[:2]}/{hexid[2:]}"] = zlib.compress(raw)
    return digest.digest()


def _tree(entries: Mapping[str, bytes | dict[str, object]], out: dict[str, bytes]) -> bytes:
    """Store a tree (files: blob ids; folders: nested dicts); return its id."""
    rows = []
    for name, value in entries.items():
        if isinstance(value, dict):
            rows.append((name + "/", b"40000 " + name.encode(), _tree(value, out)))  # type: ignore[arg-type]
        else:
            rows.append((name, b"100644 " + name.encode(), value))
    body = b"".join(mode_name + b"\0" + oid for _, mode_name, oid in sorted(rows))
    return _object("tree", body, out)


def _index(blobs: dict[str, bytes], sizes: dict[str, int]) -> bytes:
    """An index (version 2) listing every file, stat fields zero."""
    parts = [b"DIRC" + struct.pack(">II", 2, len(blobs))]
    for path in sorted(blobs, key=lambda p: p.encode()):
        name = path.encode()
        head = struct.pack(">10I", 0, 0, 0, 0, 0, 0, 0o100644, 0, 0, sizes[path])
        entry = head + blobs[path] + struct.pack(">H", min(len(name), 0xFFF)) + name
        parts.append(entry + b"\0" * (8 - len(entry) % 8))
    data = b"".join(parts)
    return data + hashlib.sha1(data, usedforsecurity=False).digest()


def one_commit(
    files: Mapping[str, bytes], *, who: str, when: str, message: str = "base", branch: str = "main"
) -> dict[str, bytes]:
    """The ``.git/`` files of a repository whose one commit holds ``files``.

    Args:
        files: relative path -> content (regular files, mode 644).
        who: ``Name <email>`` of the author and committer.
        when: ``<unix seconds> <+hhmm>``, the author and committer date.
        message: the commit message.
        branch: the branch the commit is on (``HEAD`` points at it).
    """
    out: dict[str, bytes] = {}
    blobs = {path: _object("blob", data, out) for path, data in files.items()}
    root: dict[str, object] = {}
    for path, oid in blobs.items():
        *folders, name = path.split("/")
        node = root
        for folder in folders:
            node = node.setdefault(folder, {})  # type: ignore[assignment]
        node[name] = oid
    tree = _tree(root, out).hex()  # type: ignore[arg-type]
    commit = f"tree {tree}\nauthor {who} {when}\ncommitter {who} {when}\n\n{message}\n"
    head = _object("commit", commit.encode(), out).hex()
    out[f".git/refs/heads/{branch}"] = f"{head}\n".encode()
    out[".git/HEAD"] = f"ref: refs/heads/{branch}\n".encode()
    out[".git/config"] = CONFIG
    out[".git/index"] = _index(blobs, {p: len(d) for p, d in files.items()})
    return out
