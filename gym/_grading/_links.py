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
- The host's work is bounded whatever the links name: all the links of an export
  share one `Budget` of steps; past it, the rest resolve to nothing.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["MAX_HOPS", "Budget", "FinalTree", "copies", "resolve"]

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


def resolve(link: str, tree: FinalTree, budget: Budget | None = None) -> str | None:
    """The regular file of ``tree`` that ``link`` resolves to, or None (see the module).

    Each component walked spends one step of ``budget`` (a fresh `Budget` if None):
    spent, the link resolves to nothing.
    """
    budget = budget or Budget()
    folder = posixpath.dirname(link)
    here = folder.split("/") if folder else []
    todo = _steps(tree.links[link])  # reversed: the next component last
    hops = 1
    while todo:
        budget.left -= 1
        if budget.left < 0:
            return None
        name = todo.pop()
        path = "/".join([*here, name])
        if name in ("", "."):
            continue
        if name == "..":
            if not here:
                return None  # above the workspace root
            here.pop()
        elif path in tree.links:
            hops += 1
            more = _steps(tree.links[path])
            if hops > MAX_HOPS or not more:
                return None  # a loop, a chain too long, or an absolute target
            todo += more
        elif path in tree.folders:
            here.append(name)
        elif path in tree.files and not todo:
            return path
        else:
            return None  # dangling, unknown, or a file used as a folder
    return None  # a folder, or an absolute or empty target


@dataclass
class Budget:
    """Steps left to resolve links with: a bound on the host's work, whatever they name."""

    left: int = 1 << 20


def _steps(target: str) -> list[str]:
    """The components of a link's target, the first last; none for an absolute one."""
    if not target or target.startswith("/"):
        return []
    return target.split("/")[::-1]


def copies(tree: FinalTree) -> dict[str, bytes]:
    """Each link of ``tree`` that resolves, with the bytes of the file it resolves to.

    All of them share one `Budget` (about a second of work): a correct workspace's links
    take a few steps each; links past it (in path order) resolve to nothing.
    """
    out, budget = {}, Budget()
    for link in sorted(tree.links):
        if (target := resolve(link, tree, budget)) is not None:
            out[link] = tree.files[target]
    return out
