"""Filesystem manifests (what is where, with content hashes) and the diff of two."""

from __future__ import annotations

import hashlib
import posixpath
import secrets
import shlex
from collections.abc import Sequence

from pydantic import BaseModel, Field

from gym._sandbox._stream import decode

__all__ = ["Change", "Manifest", "Node", "manifest_script", "new_split", "parse_manifest"]


def new_split() -> str:
    """A separator between a listing and its hashes that no file can be named after.

    Drawn anew for each listing, after the agent's processes are gone: a fixed one could
    be a file's name, and the records after that file's would read as hashes.
    """
    return f"--BOXGYM-HASHES-{secrets.token_hex(8)}--"


class Node(BaseModel):
    """One filesystem entry in a manifest."""

    kind: str
    """``f`` file, ``d`` directory, ``l`` symlink, or another find(1) type letter."""
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
        for mode changes.
        """
        changes: list[Change] = []
        for path, node in after.nodes.items():
            old = self.nodes.get(path)
            if old is None:
                changes.append(Change(path=path, kind="added", node=node.kind, size=node.size))
            elif old.kind != node.kind or (
                node.kind != "d" and (old.sha256 != node.sha256 or old.mode != node.mode)
            ):
                changes.append(Change(path=path, kind="modified", node=node.kind, size=node.size))
        changes += [
            Change(path=p, kind="deleted", node=n.kind)
            for p, n in self.nodes.items()
            if p not in after.nodes
        ]
        return sorted(changes, key=lambda c: c.path)


def manifest_script(roots: Sequence[str], split: str) -> str:
    """A POSIX shell script listing roots (NUL-separated records), ``split``, then hashes."""
    quoted = " ".join(shlex.quote(r) for r in roots)
    return (
        f"find {quoted} -xdev -mindepth 1 -printf '%y %m %s %p\\0' 2>/dev/null; "
        f"printf '%s\\0' {shlex.quote(split)}; "
        f"find {quoted} -xdev -type f -readable -print0 2>/dev/null | xargs -0 -r sha256sum -z"
    )


def parse_manifest(raw: bytes, split: str) -> Manifest:
    """Parse the output of `manifest_script` (or the keeper's listing) made with ``split``."""
    listing, _, hashes = raw.partition(split.encode() + b"\0")
    nodes: dict[str, Node] = {}
    for rec in listing.split(b"\0"):
        if not rec:
            continue
        kind, mode, size, path = decode(rec).split(" ", 3)
        nodes[path] = Node(kind=kind, mode=int(mode, 8), size=int(size))
    for rec in hashes.split(b"\0"):
        if rec:
            digest, _, path = decode(rec).partition("  ")
            if path in nodes:
                nodes[path].sha256 = digest
    return Manifest(nodes=nodes)
