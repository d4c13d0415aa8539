"""Symbolic links an agent left, graded as copies of the regular file they resolve to.

Invariants:

- A link is resolved on the host, on plain data only: its target (read from the
  export's archive, never followed in a container) is followed relative to the link's
  own folder, component by component, through at most `MAX_HOPS` links.
- It resolves only to a regular file whose bytes the host already holds: a file of
  the export (``Export.files``) or an unchanged file of the task's base tree (the
  task folder's ``repo/``, read by `gym._grading._code.workspace_files`: what the
  agent's container started from). The copy's bytes are those, never read from a
  path in any container: a link can give the grader nothing the agent could not
  have copied itself.
- Anything else resolves to nothing: an absolute target, a ``..`` above the workspace
  root, a folder, a dangling target, a loop or a chain over `MAX_HOPS`, a path the
  agent changed whose content was not exported (outside the writable paths, a fifo,
  a device, an unreadable file), a file of the base under ``__pycache__`` or named
  ``*.pyc`` (such changes are never listed), or ``.git`` (never part of the base).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["MAX_HOPS", "FinalTree", "copies", "resolve"]

MAX_HOPS = 8
"""The most links followed to resolve one (the first included): past it, a loop."""


@dataclass(frozen=True)
class FinalTree:
    """What the host holds, as plain data, of the workspace the agent left.

    Built by `gym._grading._export.final_tree` from an export and the task's base tree.
    """

    files: Mapping[str, bytes]
    """Regular files with known bytes (relative path -> content)."""
    folders: frozenset[str]
    """Folders known to stand (parents of what stands, and folders the agent made)."""
    links: Mapping[str, str]
    """Symlinks among the allowed changes (relative path -> target, as written)."""


def resolve(link: str, tree: FinalTree) -> str | None:
    """The regular file of ``tree`` that ``link`` resolves to, or None (see the module)."""
    folder = posixpath.dirname(link)
    here = folder.split("/") if folder else []
    todo = _steps(tree.links[link])
    hops = 1
    while todo is not None and todo:
        name = todo.pop(0)
        path = "/".join([*here, name])
        if name in ("", "."):
            continue
        if name == "..":
            if not here:
                return None  # above the workspace root
            here.pop()
        elif path in tree.links:
            hops += 1
            todo = None if hops > MAX_HOPS else _join(_steps(tree.links[path]), todo)
        elif path in tree.folders:
            here.append(name)
        elif path in tree.files and not todo:
            return path
        else:
            return None  # dangling, unknown, or a file used as a folder
    return None  # a folder, a loop, or an absolute target


def _steps(target: str) -> list[str] | None:
    """The components of a link's target; None for an absolute or empty one."""
    if not target or target.startswith("/"):
        return None
    return target.split("/")


def _join(first: list[str] | None, rest: list[str]) -> list[str] | None:
    return None if first is None else first + rest


def copies(tree: FinalTree) -> dict[str, bytes]:
    """Each link of ``tree`` that resolves, with the bytes of the file it resolves to."""
    out = {}
    for link in sorted(tree.links):
        if (target := resolve(link, tree)) is not None:
            out[link] = tree.files[target]
    return out
