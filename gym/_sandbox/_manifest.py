"""Filesystem manifests (what is where, with content hashes) and the diff of two."""

from __future__ import annotations

import hashlib
import posixpath
import re
import secrets
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from gym._core._errors import ExportTooLarge
from gym._sandbox._stream import decode

if TYPE_CHECKING:
    from gym._sandbox._config import SandboxConfig

__all__ = [
    "HASH_LIMIT",
    "Change",
    "Manifest",
    "Node",
    "manifest_script",
    "mount_sizes",
    "mounts_bytes",
    "new_split",
    "parse_manifest",
]

HASH_LIMIT = 64 << 20
"""Larger files are listed without a hash, as by the keeper (its ``HASH_LIMIT``)."""
_SIZE = re.compile(r"(?:^|,)size=(0x[0-9a-fA-F]+|[0-9]+)([kKmMgGtTpPeE]?)(?:,|$)")


def new_split() -> str:
    """A separator between a listing and its hashes that no file can be named after.

    Drawn anew for each listing, after the agent's processes are gone: a fixed one could
    be a file's name, and the records after that file's would read as hashes.
    """
    return f"--BOXGYM-HASHES-{secrets.token_hex(8)}--"


class Node(BaseModel):
    """One filesystem entry in a manifest."""

    kind: str
    """``f`` file, ``d`` directory, ``l`` symlink, or another find(1) type letter;
    ``?`` for a path that is not UTF-8, or that two entries read as (`UNNAMED`)."""
    mode: int = 0
    """Permission bits."""
    size: int = 0
    """Size in bytes as find(1) prints it (a file's, a link's target path length...)."""
    sha256: str = ""
    """Content hash (files)."""


class Change(BaseModel):
    """One difference between two manifests."""

    path: str
    """Absolute path in the container."""
    kind: str
    """``added``, ``modified`` or ``deleted``."""
    node: str = "f"
    """What changed: ``f`` file, ``d`` directory, ``l`` symlink (find(1) letters)."""
    size: int = 0
    """Its size in bytes as the keeper listed it after the change (0 when deleted, and
    for changes read from the engine's container layer, which has no sizes)."""


class Manifest(BaseModel):
    """Absolute path -> node, for the writable parts of a sandbox."""

    nodes: dict[str, Node] = Field(default_factory=dict)
    """Every entry found, by absolute path."""

    @classmethod
    def of_files(cls, root: str, files: dict[str, bytes], *, mode: int = 0o644) -> Manifest:
        """The manifest that writing ``files`` under an empty ``root`` produces."""
        nodes: dict[str, Node] = {}
        for rel, data in files.items():
            path = posixpath.join(root, rel)
            nodes[path] = Node(
                kind="f", mode=mode, size=len(data), sha256=hashlib.sha256(data).hexdigest()
            )
            parent = posixpath.dirname(path)
            while parent.startswith(root + "/"):
                nodes.setdefault(parent, Node(kind="d"))
                parent = posixpath.dirname(parent)
        return cls(nodes=nodes)

    def merged(self, other: Manifest) -> Manifest:
        """This manifest with ``other``'s entries added or replacing."""
        return Manifest(nodes={**self.nodes, **other.nodes})

    def diff(self, after: Manifest) -> list[Change]:
        """Files and links added, modified or deleted between self and ``after``.

        Directories count when added or deleted, or when one stands where something else
        was (a file of the task replaced by a folder is a change to that file), never
        for mode changes. A file changes with its hash, mode or size (a file over the
        hashing limit has no hash).
        """
        changes: list[Change] = []
        for path, node in after.nodes.items():
            old = self.nodes.get(path)
            if old is None:
                changes.append(Change(path=path, kind="added", node=node.kind, size=node.size))
            elif old.kind != node.kind or (
                node.kind != "d"
                and (old.sha256, old.mode, old.size) != (node.sha256, node.mode, node.size)
            ):  # the size too: a file too large to hash has no digest to differ
                changes.append(Change(path=path, kind="modified", node=node.kind, size=node.size))
        changes += [
            Change(path=p, kind="deleted", node=n.kind)
            for p, n in self.nodes.items()
            if p not in after.nodes
        ]
        return sorted(changes, key=lambda c: c.path)


def mounts_bytes(config: SandboxConfig) -> int:
    """The most bytes of files a listing of the writable mounts may hash: what they can hold.

    The sum of the tmpfs mounts' ``size=`` (`mount_sizes`). Distinct files of a listing
    can never hold more, so no state the mounts can hold is refused; past it are only
    sparse files (read in full) or the same bytes named many times: the agent's doing,
    an export too large.
    """
    return sum(mount_sizes(config).values())


def mount_sizes(config: SandboxConfig) -> dict[str, int]:
    """Each tmpfs mount's path and the bytes of files it can hold.

    Its ``size=`` (the kernel's suffixes); a mount without one the kernel enforces (none,
    ``0``) holds at most the memory limit, which its files are charged to.
    """
    sizes: dict[str, int] = {}
    for path, options in config.tmpfs.items():
        found = _SIZE.search(options)
        size = 0
        if found:
            number, unit = found.groups()
            size = int(number, 16 if number.startswith("0x") else 10)
            size <<= 10 * ("kmgtpe".index(unit.lower()) + 1) if unit else 0
        sizes[path] = size or config.memory_mb << 20
    return sizes


def manifest_script(roots: Sequence[str], split: str, hashed: int | None = None) -> str:
    """A POSIX shell script listing roots (NUL-separated records), ``split``, then hashes.

    Files over `HASH_LIMIT` are listed without a hash, as by the keeper. With ``hashed``,
    the sizes of the files to hash are summed first, each name as ``sha256sum`` reads it
    (a sparse file at its length, each hard link again): over ``hashed`` bytes, nothing
    is read and the hashes are one record, ``over hashed N`` (`parse_manifest` raises).
    """
    quoted = " ".join(shlex.quote(r) for r in roots)
    files = f"find {quoted} -xdev -type f -readable -size -{HASH_LIMIT + 1}c"
    digests = f"{files} -print0 2>/dev/null | xargs -0 -r sha256sum -z"
    if hashed is not None:
        cap = int(hashed)
        within = f"{files} -printf '%s\\n' 2>/dev/null | awk '(s += $1) > {cap} {{ exit 1 }}'"
        digests = f"if {within}; then {digests}; else printf 'over hashed {cap}\\0'; fi"
    return (
        f"find {quoted} -xdev -mindepth 1 -printf '%y %m %s %p\\0' 2>/dev/null; "
        f"printf '%s\\0' {shlex.quote(split)}; {digests}"
    )


def parse_manifest(raw: bytes, split: str) -> Manifest:
    """Parse the output of `manifest_script` (or the keeper's listing) made with ``split``.

    Raises:
        ExportTooLarge: the script found the files to hash over its ``hashed`` bytes (its
            hashes are then one record, ``over hashed N``: never a digest's).
    """
    listing, _, hashes = raw.partition(split.encode() + b"\0")
    if hashes.startswith(b"over hashed "):
        budget = decode(hashes.split(b"\0", 1)[0]).rsplit(" ", 1)[-1]
        raise ExportTooLarge(
            f"the files left are over the hashing budget ({budget} bytes to read, what "
            "the writable mounts can hold); they were not hashed, so nothing can be graded"
        )
    nodes: dict[str, Node] = {}
    for rec in listing.split(b"\0"):
        if not rec:
            continue
        kind, mode, size, raw = rec.split(b" ", 3)
        path, exact = _path_of(raw)
        node = Node(kind=decode(kind), mode=int(mode, 8), size=int(size))
        if not exact or path in nodes:  # never read by a name that is not its own
            node.kind = UNNAMED
        nodes[path] = node
    for rec in hashes.split(b"\0"):
        if rec:
            digest, _, raw = rec.partition(b"  ")
            path, exact = _path_of(raw)
            if exact and path in nodes and nodes[path].kind != UNNAMED:
                nodes[path].sha256 = decode(digest)
    return Manifest(nodes=nodes)


UNNAMED = "?"
"""The kind of a listed entry whose path is not UTF-8, or that two entries read as: its
text is not a name of it alone (a name that is not UTF-8 reads with U+FFFD, as another
name may be spelt), so nothing is ever read by it; a change to it is listed, and never
exported (a file of 6 bytes named ``h\\xff`` beside a sparse terabyte named ``h`` and
U+FFFD read as one path: the size of one, the archive of the other)."""


def _path_of(raw: bytes) -> tuple[str, bool]:
    """A listed path as text, and whether it is that path exactly (UTF-8)."""
    try:
        return raw.decode("utf-8"), True
    except UnicodeDecodeError:
        return decode(raw), False
