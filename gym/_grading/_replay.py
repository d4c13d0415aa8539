"""Gold replay for file trees and output: run the gold command where the agent never was.

A task that starts from a tree of files and is solved by a command (a shell task) is
graded by replaying its gold command in a fresh grading container, from the same
initial tree, and comparing, in this process and on plain values:

- the output: the agent's submitted answer against the gold command's standard output,
  both normalised (`normalise_output`);
- the files: the manifest of the agent's final workspace against the gold's
  (`FileTree`: the workspace folder itself and every entry under it, each with its type,
  mode, size, sha256, link target and extended attributes), everywhere or only under
  declared paths (`compare_trees`);
- the side effects: whatever the agent changed that the gold left as it was
  (`unexpected_changes`), a gating flag.

Both manifests are read by one fixed program (gym/_grading/runner/tree_manifest.py,
sent as the text of ``python3 -I -c``, never a file of the container) within bounds;
links, fifos, devices, setuid bits, odd names and unreadable entries are reported and
never followed. Nothing the agent wrote is executed or imported here.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import secrets
import tarfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from gym._core._errors import ConfigError, GradingError, SandboxError
from gym._core._models import Component, Flag
from gym._grading._export import matches
from gym._sandbox import Sandbox, SandboxConfig, SandboxProvider

__all__ = [
    "REPLAY_VERSION",
    "FileNode",
    "FileTree",
    "GoldReplay",
    "TREE_PROGRAM",
    "compare_output",
    "compare_trees",
    "gold_uid",
    "normalise_output",
    "put_tree",
    "read_file_tree",
    "replay_gold",
    "tree_archive",
    "unexpected_changes",
]

TREE_PROGRAM = (Path(__file__).parent / "runner" / "tree_manifest.py").read_text()
"""The manifest program's source, run as ``python3 -I -c TREE_PROGRAM ROOT ...``."""
REPLAY_VERSION = hashlib.sha256(TREE_PROGRAM.encode() + Path(__file__).read_bytes()).hexdigest()[
    :12
]
"""A hash of this module and the manifest program: a grader built on them records it in
its version, so a change of either is a new grader version."""
MAX_ENTRIES = 10_000
"""Entries a manifest lists at most (more: the tree is ``over``, its episode fails)."""
MAX_DEPTH = 32
"""Levels of folders listed at most (deeper ones are odd entries, never equal)."""
MAX_HASHED = 512 << 20
"""Bytes of file content hashed at most."""
MAX_LISTING = 24 << 20
"""Bytes of the manifest program's JSON output accepted at most."""
MAX_OUTPUT = 1 << 20
"""Bytes of the gold command's standard output kept (more is a task defect)."""
SHOWN = 8
"""Differences named in a component's explanation (the rest are counted)."""
NEW_FILE_MODE = 0o644
"""The mode a new file gets under the umask (022) the agent's shell and the gold's run
both have: a file of new content the gold wrote with it has a mode nobody chose."""


class FileNode(BaseModel):
    """One entry of a file tree, as the manifest program read it."""

    type: str
    """``file``, ``dir``, ``symlink``, ``fifo``, ``socket``, ``char`` or ``block``."""
    mode: int = 0
    """Permission bits, setuid, setgid and sticky included."""
    size: int = 0
    """Size in bytes of a readable file's content as lines (0 for anything else): a last
    line without its newline counts as if it had one."""
    sha256: str = ""
    """Content hash of a readable file as lines, like ``size`` ('' otherwise: such a file
    never compares equal)."""
    target: str = ""
    """A symbolic link's target (read, never followed)."""
    xattrs: str = ""
    """sha256 of its extended attributes, names and values ('' when it has none)."""

    def differs(self, other: FileNode, *, new: bool = False) -> str:
        """What differs from ``other`` ('' when they are equal for grading).

        ``new``: this is a file of new content the gold wrote (see `tree_differences`).
        Where its mode is the one any new file gets (`NEW_FILE_MODE`), the gold did not
        choose it, and ``other`` may have that mode or fewer permissions (a file made by
        ``mktemp``, 600, then moved into place); more, or any other bit, differ.
        """
        if self.type != other.type:
            return f"{other.type} instead of {self.type}"
        chosen = not new or self.type != "file" or self.mode != NEW_FILE_MODE
        if other.mode != self.mode and (chosen or other.mode & ~self.mode):
            return f"mode {other.mode:o} instead of {self.mode:o}"
        if self.type == "file":
            if not self.sha256 or not other.sha256:
                return "unreadable: its content cannot be compared"
            if (self.size, self.sha256) != (other.size, other.sha256):
                return f"content differs ({other.size} bytes, expected {self.size})"
        if self.target != other.target:
            return f"link to {other.target!r} instead of {self.target!r}"
        if self.xattrs != other.xattrs:
            return "extended attributes differ"
        return ""


class FileTree(BaseModel):
    """A folder's manifest: every entry by relative path, what was odd, what was over."""

    nodes: dict[str, FileNode] = Field(default_factory=dict)
    """Relative path -> entry."""
    odd: dict[str, str] = Field(default_factory=dict)
    """Relative path -> why it is odd (a link, a fifo, a setuid bit, an odd name...)."""
    over: str = ""
    """What was over its bound (``entries N``, ``bytes N``); the listing stopped there."""

    @classmethod
    def parse(cls, raw: str) -> FileTree:
        """A tree from the manifest program's output (bounded and checked).

        Raises:
            GradingError: the output is not what the program prints (a bug of ours).
        """
        if len(raw) > MAX_LISTING:
            raise GradingError(f"the file manifest is over {MAX_LISTING} bytes")
        try:
            data = json.loads(raw)
            nodes: dict[str, FileNode] = {}
            odd: dict[str, str] = {}
            for path, why in data["odd"]:
                odd[str(path)] = f"{odd[path]}; {why}" if path in odd else str(why)
            for path, kind, mode, size, sha, target, xattrs in data["entries"]:
                node = FileNode(
                    type=kind, mode=mode, size=size, sha256=sha, target=target, xattrs=xattrs
                )
                if path in nodes:  # two names that read the same (escaped bytes)
                    odd[path] = f"{odd.get(path, '')}; two entries read as this name".lstrip("; ")
                nodes[str(path)] = node
            return cls(nodes=nodes, odd=odd, over=str(data["over"]))
        except (ValueError, KeyError, TypeError, RecursionError, ValidationError) as exc:
            raise GradingError(f"the file manifest is malformed: {str(exc)[:300]}") from None


def read_file_tree(
    sandbox: Sandbox, root: str, *, user: str | None = None, timeout: float = 120.0
) -> FileTree:
    """The manifest of ``root`` in a sandbox, read by the fixed manifest program.

    Call it once nothing else runs in the sandbox (after the agent's processes are
    killed, or after the gold command). A tree over its bounds comes back with ``over``
    set: the caller decides (an agent's tree over them fails its episode).

    Raises:
        SandboxError: the sandbox is gone, or the program could not run.
        GradingError: its output is malformed.
    """
    argv = ["python3", "-I", "-c", TREE_PROGRAM, root]
    argv += [str(MAX_ENTRIES), str(MAX_DEPTH), str(MAX_HASHED), str(MAX_LISTING - 4096)]
    result = sandbox.exec(argv, user=user, timeout=timeout, max_output=MAX_LISTING, cwd="/")
    if result.timed_out:
        raise GradingError(f"listing {root} did not finish within {timeout:.0f} s")
    if result.exit_code == 0 and result.stdout_truncated:
        # The fixed program finished; its output depends on the tree alone: the tree is
        # over the listing's bound (the caller's rule for a tree over its bounds applies).
        return FileTree(over=f"listing over {MAX_LISTING} bytes")
    if result.exit_code != 0 or result.stdout_truncated:
        sandbox.ensure_running()
        raise SandboxError(
            f"the manifest program failed on {root} (exit {result.exit_code}): "
            f"{result.stderr.strip()[-500:]}"
        )
    return FileTree.parse(result.stdout)


# -- the initial tree ---------------------------------------------------------------------


def tree_archive(folder: Path, *, max_bytes: int = 64 << 20) -> bytes:
    """A tar archive of a task's initial tree, keeping each entry's mode and mtime.

    Folders, regular files and symbolic links (as links); anything else is refused.
    Deterministic for a given folder (sorted, owner 1000).

    Raises:
        ConfigError: the folder holds a fifo, a device or a socket, or more than
            ``max_bytes`` of content.
    """
    buf = io.BytesIO()
    total = 0
    with tarfile.open(fileobj=buf, mode="w:", format=tarfile.GNU_FORMAT) as archive:
        for path in _walk(folder):
            info = archive.gettarinfo(str(path), arcname=path.relative_to(folder).as_posix())
            if not (info.isdir() or info.isreg() or info.issym()):
                raise ConfigError(f"{path}: only files, folders and links may be in a task tree")
            info.uid = info.gid = 1000
            info.uname = info.gname = ""
            total += info.size
            if total > max_bytes:
                raise ConfigError(f"{folder} holds more than {max_bytes} bytes")
            if info.isreg():
                with path.open("rb") as fh:
                    archive.addfile(info, fh)
            else:
                archive.addfile(info)
    return buf.getvalue()


def _walk(folder: Path) -> Iterable[Path]:
    for top, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted([*dirs, *files]):
            yield Path(top) / name


def put_tree(
    sandbox: Sandbox, root: str, archive: bytes, *, user: str | None = None, timeout: float = 60
) -> None:
    """Unpack `tree_archive`'s archive under ``root`` keeping modes and mtimes.

    Raises:
        SandboxError: the sandbox is gone or the archive could not be unpacked.
    """
    script = 'mkdir -p "$1" && tar -x -p --no-same-owner -C "$1"'
    result = sandbox.exec(
        ["sh", "-c", script, "sh", root], stdin=archive, user=user, timeout=timeout
    )
    if result.exit_code != 0:
        sandbox.ensure_running()
        raise SandboxError(f"could not write the task's files under {root}: {result.stderr[-500:]}")


# -- the gold replay ----------------------------------------------------------------------


class GoldReplay(BaseModel):
    """What the gold command did in a fresh grading container, as plain values."""

    stdout: str
    """Its standard output (decoded tolerantly)."""
    exit_code: int | None
    """Its exit status."""
    initial: FileTree
    """The workspace's manifest before it ran (the task's initial tree)."""
    final: FileTree
    """The workspace's manifest after it ran."""


def replay_gold(
    sandboxes: SandboxProvider,
    config: SandboxConfig,
    archive: bytes,
    command: str,
    *,
    user: str,
    workdir: str = "/workspace",
    timeout: float = 120.0,
) -> GoldReplay:
    """Run a gold command in a fresh grading container from the task's initial tree.

    The tree (`tree_archive`) is unpacked under ``workdir``, its manifest read, the
    command run by ``bash`` in ``workdir`` as ``user``, then the manifest read again.
    The container is a grading container of ``sandboxes`` (``grader``: used once, no
    network), given back at the end. ``user`` is ``uid:gid`` of a uid no agent runs as
    (`gold_uid`), which ``config``'s mounts let write: what the kernel counts per uid
    (processes, pipes, epoll and inotify watches, pending signals) is shared by every
    process of that uid on the machine, and a grading container's exec user is root.

    Raises:
        GradingError: the gold command timed out, printed more than `MAX_OUTPUT`, exited
            with a status other than 0, or its tree is over the manifest's bounds (a task
            defect or a fault, never the agent's, and never a reference to grade by).
        SandboxError: the grading container failed.
    """
    sandbox = sandboxes.grader(config)
    try:
        put_tree(sandbox, workdir, archive, user=user)
        initial = read_file_tree(sandbox, workdir, user=user)
        result = sandbox.exec(
            ["bash", "-c", command], cwd=workdir, user=user, timeout=timeout, max_output=MAX_OUTPUT
        )
        if result.timed_out or result.stdout_truncated or result.exit_code != 0:
            why = (
                "timed out"
                if result.timed_out
                else f"printed over {MAX_OUTPUT} bytes"
                if result.stdout_truncated
                else f"exited with status {result.exit_code}: {result.stderr.strip()[-300:]}"
            )
            raise GradingError(f"the gold command {why}: the task must be fixed")
        final = read_file_tree(sandbox, workdir, user=user)
    finally:
        sandboxes.release(sandbox)
    if final.over or initial.over:
        raise GradingError(f"the gold's tree is over the manifest's bounds ({final.over})")
    return GoldReplay(
        stdout=result.stdout, exit_code=result.exit_code, initial=initial, final=final
    )


def gold_uid() -> int:
    """A uid for one gold replay: drawn anew, in the range no agent or image uses.

    Each agent container runs as a uid of its own below 2**24 (`SandboxConfig.own_uid`);
    a grading's code runs under uids drawn from 2**24 up (`boxgym_runner.Uids`); a gold
    drawn there too shares no per-uid count of the kernel's with any of them but by
    chance.
    """
    return (1 << 24) + secrets.randbelow((1 << 31) - (1 << 24))


def replay_key(*parts: str | bytes) -> str:
    """A cache key of a replay's inputs (image, archive, command, settings)."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(hashlib.sha256(data).digest())
    return h.hexdigest()


# -- comparing -----------------------------------------------------------------------------


def normalise_output(text: str) -> str:
    """Output as compared: blanks and empty lines at the edges do not count.

    CRLF reads as LF; in each line, leading and trailing spaces and tabs are dropped and
    runs of them inside it read as one space; leading and trailing empty lines are
    dropped. Case, punctuation and the order of lines count.
    """
    lines = [" ".join(line.split()) for line in text.replace("\r\n", "\n").split("\n")]
    return "\n".join(lines).strip("\n")


def compare_output(answer: str, expected: str) -> Component:
    """A gated component: the answer equals the expected output once both are normalised."""
    got, want = normalise_output(answer), normalise_output(expected)
    if got == want:
        return Component(score=1.0, passed=True, explanation="the answer is the gold's output")
    got_lines, want_lines = got.split("\n"), want.split("\n")
    first = next(
        (i for i, (g, w) in enumerate(zip(got_lines, want_lines, strict=False)) if g != w),
        min(len(got_lines), len(want_lines)),
    )
    shown = got_lines[first][:200] if first < len(got_lines) else "(nothing)"
    explanation = (
        f"the answer differs from the gold's output at line {first + 1}: {shown!r} "
        f"({len(got_lines)} lines, expected {len(want_lines)})"
    )
    if not got:
        explanation = f"the answer is empty; the gold's output has {len(want_lines)} lines"
    return Component(score=0.0, passed=False, explanation=explanation)


def _region(tree: FileTree, paths: Sequence[str]) -> set[str]:
    names = set(tree.nodes) | set(tree.odd)
    return {p for p in names if not paths or matches(p, tuple(paths))}


def tree_differences(
    got: FileTree, want: FileTree, paths: Sequence[str] = (), initial: FileTree | None = None
) -> list[tuple[str, str]]:
    """Each difference of ``got`` from ``want``, as (path, what differs), in path order.

    Only under ``paths`` (globs relative to the root; everywhere when empty). With the
    ``initial`` tree, a file ``want`` has at a path the initial tree had not, holding
    content no initial file held, is new (`FileNode.differs`): a file moved or copied
    keeps a mode someone gave it (a rename, then ``chmod 400``, differs).
    """
    out: list[tuple[str, str]] = []
    held = {n.sha256 for n in initial.nodes.values() if n.type == "file"} if initial else set()
    for path in sorted(_region(got, paths) | _region(want, paths)):
        mine, theirs = got.nodes.get(path), want.nodes.get(path)
        new = (
            initial is not None
            and path not in initial.nodes
            and theirs is not None
            and theirs.sha256 not in held
        )
        if mine is None and theirs is not None:
            out.append((path, "missing"))
        elif theirs is None and mine is not None:
            out.append((path, f"not expected ({mine.type})"))
        elif mine is not None and theirs is not None and (why := theirs.differs(mine, new=new)):
            out.append((path, why))
        elif path in got.odd and got.odd.get(path) != want.odd.get(path):
            out.append((path, got.odd[path]))
    return out


def _listed(diffs: list[tuple[str, str]]) -> str:
    shown = "; ".join(f"{path!r}: {why}" for path, why in diffs[:SHOWN])
    return shown + (f"; and {len(diffs) - SHOWN} more" if len(diffs) > SHOWN else "")


def compare_trees(
    got: FileTree, want: FileTree, paths: Sequence[str] = (), initial: FileTree | None = None
) -> Component:
    """A gated component: the agent's final tree equals the gold's (under ``paths``).

    Equal means the same entries (the workspace folder itself, ``.``, among them) with
    the same type, mode, size, content hash, link target and extended attributes
    (folders: type, mode and extended attributes). Contents compare as lines (a last
    line without its newline is the same line). Given the ``initial`` tree, a file of new
    content the gold wrote with the mode any new file gets may have fewer permissions
    (see `tree_differences`). An unreadable file, and an odd entry the gold's tree does
    not have, never compare equal.
    """
    where = f"under {', '.join(paths)}" if paths else "in the workspace"
    if got.over:
        why = f"the workspace is over the manifest's bounds ({got.over}): it was not compared"
        return Component(score=0.0, passed=False, explanation=why)
    diffs = tree_differences(got, want, paths, initial)
    if not diffs:
        return Component(score=1.0, passed=True, explanation=f"the files {where} are the gold's")
    explanation = f"{len(diffs)} differences {where}: {_listed(diffs)}"
    return Component(score=0.0, passed=False, explanation=explanation)


def unexpected_changes(initial: FileTree, gold: FileTree, final: FileTree) -> list[Flag]:
    """A gating flag for what the agent changed that the gold left as it was.

    A path the gold did not touch (its entry, or its absence, is the same before and
    after the gold) must be the same in the agent's final tree: a scratch file left in
    the workspace, an input file edited or deleted.
    """
    if final.over:
        return []  # nothing was listed: the files component already fails
    touched = {path for path, _ in tree_differences(gold, initial)}
    changed = [d for d in tree_differences(final, initial) if d[0] not in touched]
    if not changed:
        return []
    return [Flag(name="unexpected_change", detail=_listed(changed), gating=True)]
