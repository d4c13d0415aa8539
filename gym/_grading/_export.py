"""Exporting an episode's final state from the agent's container.

Before anything is copied, every process of the agent is killed, so nothing changes
files during the copy (no symlink race, no late writes). The export holds only what
the grader needs: the changed files inside the allowed paths, the folders made there,
and the list of every change for the trajectory graders.

Invariants:

- Only regular-file content crosses: a hard link is exported as the plain file it is;
  a symlink is exported as a copy of the regular file it resolves to, from bytes the
  host already holds (this export's files, or the task's base tree that the caller
  passes: see `gym._grading._links`), never by following it in any container; a
  symlink that resolves to no such file, a fifo, a socket or a device is never applied.
- A folder made inside the allowed paths, empty or not, is listed (``folders``) and
  made in the grading workspace as a plain folder (the usual mode, nothing else of it).
  A folder deleted, or made where a file of the task was, deletes that file as before.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field

from gym._core._errors import ExportTooLarge
from gym._grading._links import FinalTree, copies
from gym._sandbox import Change, Entry, Sandbox

__all__ = ["Export", "export_workspace", "matches"]

IGNORED = re.compile(r"(^|/)(__pycache__|\.pytest_cache|\.mypy_cache|\.ruff_cache)(/|$)|\.pyc$")


@lru_cache(maxsize=256)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            out.append({"*": "[^/]*", "?": "[^/]"}.get(pattern[i], re.escape(pattern[i])))
            i += 1
    return re.compile("".join(out) + r"\Z", re.S)


def matches(path: str, patterns: tuple[str, ...] | list[str]) -> bool:
    """Whether a relative path matches any glob (``*`` stays in a folder, ``**`` crosses)."""
    return any(_glob_regex(p).match(path) for p in patterns)


class Export(BaseModel):
    """The final state of a code episode, as handed to graders."""

    model_config = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")

    workspace: str = "/workspace"
    """The workspace root in the container."""
    files: dict[str, bytes | None] = Field(default_factory=dict)
    """Changed files inside the allowed paths (relative path -> content, None if deleted)."""
    changes: list[Change] = Field(default_factory=list)
    """Every change in the writable mounts (absolute paths), allowed or not."""
    folders: list[str] = Field(default_factory=list)
    """Folders made inside the allowed paths (relative paths), empty ones included: each
    is made in the grading workspace. An export stored before this field reads as none."""
    links: list[str] = Field(default_factory=list)
    """Symlinks, hard links and special files (fifos, sockets, devices) among the allowed
    changes. A hard link is exported as the plain file it is, and a symlink as a copy of
    the regular file it resolves to (`gym._grading._links`), their content in ``files``;
    other symlinks and special files are never applied."""
    oversized: bool = False
    """The allowed changes exceeded the export cap, or the writable mounts their listing
    cap; none were exported (and ``changes`` is empty in the second case)."""

    @classmethod
    def written(cls, files: dict[str, bytes]) -> Export:
        """The final state of an agent that wrote ``files`` (workspace paths) and nothing else."""
        export = cls(files=dict(files))
        export.changes = [
            Change(path=f"{export.workspace}/{rel}", kind="modified") for rel in files
        ]
        return export

    def applied_to(self, base: dict[str, bytes]) -> dict[str, bytes]:
        """The final files: ``base`` with the exported changes and deletions applied."""
        files = dict(base)
        for rel, data in self.files.items():
            if data is None:
                files.pop(rel, None)
            else:
                files[rel] = data
        return files

    def relative(self, path: str) -> str | None:
        """A path relative to the workspace, or None if it lies outside."""
        if path == self.workspace or not path.startswith(self.workspace + "/"):
            return None
        return path[len(self.workspace) + 1 :]


def export_workspace(
    sandbox: Sandbox,
    allowed: tuple[str, ...],
    *,
    workspace: str | None = None,
    max_bytes: int = 32 << 20,
    base: Mapping[str, bytes] | None = None,
) -> Export:
    """Freeze the agent's container and export its final state.

    Args:
        sandbox: the agent's sandbox (its processes are killed first).
        allowed: glob patterns, relative to the workspace, the agent may change.
        workspace: the workspace root (the sandbox workdir by default).
        max_bytes: the most content exported; more is a finding (``oversized``), not
            an error of the harness. So are writable mounts holding more than their
            listing may be (the keeper's cap): nothing is exported then, and the
            episode fails with ``export_too_large``. A symlink graded as a copy counts
            against it again, as a hard link does.
        base: the task's base tree (relative path -> bytes, as the host read it: what
            the agent's container started from), for symlinks to resolve to its files;
            None: they resolve only to files of this export.
    """
    root = workspace or sandbox.config.workdir
    export = Export(workspace=root)
    try:
        changed = sandbox.final_diff()
    except ExportTooLarge:  # the keeper's own answer: the agent's files, not a fault
        export.oversized = True
        return export
    export.changes = [
        c
        for c in changed
        if not IGNORED.search(c.path) and (export.relative(c.path) or "").split("/")[0] != ".git"
    ]
    wanted, listed = [], 0
    for change in export.changes:
        rel = export.relative(change.path)
        if rel is None or not matches(rel, allowed):
            continue
        if change.node == "d":  # listed, never packed (packing a folder and its files
            if change.kind == "modified":  # made false hard links); one where a file was
                export.files[rel] = None  # deletes it
            if change.kind != "deleted":
                export.folders.append(rel)
            continue
        if change.kind == "deleted":
            export.files[rel] = None
        elif change.node not in ("f", "l"):  # a socket, fifo or device where a file may be
            export.links.append(rel)
        else:
            wanted.append(rel)
            listed += change.size
    if listed > max_bytes:  # the keeper's sizes: a sparse 2 TiB file is never read
        export.oversized = True
        return export
    if wanted:
        try:
            entries = sandbox.get_files(root, wanted, max_bytes=max_bytes, listing=True)
        except ExportTooLarge:
            export.oversized = True
            return export
        for entry in entries:
            if entry.kind == "file":
                export.files[entry.path] = entry.data
            elif entry.kind in ("symlink", "special"):
                export.links.append(entry.path)
        export.links += unread(wanted, entries)
        export.links += hard_links(sandbox, root, [e.path for e in entries if e.kind == "file"])
        if not _hard_links_as_files(export, entries, max_bytes):
            return Export(workspace=root, changes=export.changes, oversized=True)
        targets = {e.path: e.target for e in entries if e.kind == "symlink"}
        if not _symlinks_as_files(export, targets, base or {}, max_bytes):
            return Export(workspace=root, changes=export.changes, oversized=True)
    return export


def unread(wanted: list[str], entries: list[Entry]) -> list[str]:
    """Listed changes the archive does not hold: what the agent's uid cannot read.

    tar leaves out what it cannot read (``--ignore-failed-read``: a file made
    unreadable, or under a folder made unsearchable). Such a change is never applied, as
    a link is not: where a file of the task was, the grader would grade the pristine
    file instead of what the agent left, so it is listed among the links (which gates).
    """
    read = {entry.path for entry in entries}
    return [path for path in wanted if path not in read]


def _hard_links_as_files(export: Export, entries: list[Entry], max_bytes: int) -> bool:
    """Give a hard link to an exported file that file's content (False: over the cap).

    tar packs the second name of a file as a link to the first; its content is the
    first's, so what is graded is what the agent left (it stays listed in ``links``).
    Each copy counts against ``max_bytes`` again: many names of one large file are an
    export too large, never a grading container fed gigabytes.
    """
    total = sum(len(data) for data in export.files.values() if data is not None)
    for entry in entries:
        data = export.files.get(entry.target) if entry.kind == "special" else None
        if data is None or entry.path in export.files:
            continue
        total += len(data)
        if total > max_bytes:
            return False
        export.files[entry.path] = data
    return True


def _symlinks_as_files(
    export: Export, targets: Mapping[str, str], base: Mapping[str, bytes], max_bytes: int
) -> bool:
    """Give each symlink that resolves the bytes of its file (False: over the cap).

    What is graded is what the agent could have copied itself (`gym._grading._links`);
    each copy counts against ``max_bytes`` again, as a hard link's does. A symlink that
    does not resolve stays only in ``links``: never applied, as before.
    """
    total = sum(len(data) for data in export.files.values() if data is not None)
    for link, data in copies(final_tree(export, targets, base)).items():
        total += len(data)
        if total > max_bytes:
            return False
        export.files[link] = data
    return True


def final_tree(export: Export, links: Mapping[str, str], base: Mapping[str, bytes]) -> FinalTree:
    """What the host holds of the final workspace: unchanged base files, then the export's.

    A path the agent changed stands only as the export holds it: a change that was not
    exported (outside the allowed paths, unreadable, special) has no known content.

    Args:
        export: the export (its ``files``, ``folders`` and ``changes``).
        links: the symlinks among its allowed changes (relative path -> target).
        base: the task's base tree (relative path -> bytes).
    """
    changed = {rel for c in export.changes if (rel := export.relative(c.path)) is not None}
    files = {p: d for p, d in base.items() if p not in changed and not IGNORED.search(p)}
    files |= {p: d for p, d in export.files.items() if d is not None}
    standing = [*files, *links, *export.folders]
    folders = frozenset({*export.folders, *(f for p in standing for f in parents(p))})
    return FinalTree(files=files, folders=folders, links=dict(links))


def hard_links(sandbox: Sandbox, root: str, paths: list[str]) -> list[str]:
    """The paths among regular files that have another name (a link count over 1).

    A hard link to a file outside the export is packed as a plain file by tar; only
    the link count shows it.
    """
    if not paths:
        return []
    each = 'for p in "$@"; do stat -c %h -- "$p" 2>/dev/null || echo 1; done'
    script = f"cd \"$1\" && xargs -0 -r sh -c '{each}' sh"  # any number of paths: on stdin
    names = b"\0".join(p.encode("utf-8", "surrogateescape") for p in paths) + b"\0"
    result = sandbox.exec(["sh", "-c", script, "sh", root], timeout=60, stdin=names)
    counts = result.stdout.split()
    if result.exit_code != 0 or len(counts) != len(paths):
        return list(paths)  # unknown: fail closed, each is listed as a link
    return [p for p, n in zip(paths, counts, strict=True) if n != "1"]


def parents(path: str) -> list[str]:
    """The parent folders of a relative path, nearest last."""
    out: list[str] = []
    while (path := posixpath.dirname(path)) not in ("", "/"):
        out.insert(0, path)
    return out
