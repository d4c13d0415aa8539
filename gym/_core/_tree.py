"""Folders of files read into memory: a low-layer helper shared by grading and the envs.

A task folder is untrusted data: what of it is read is read as regular files inside it.
Nothing here follows a symbolic link, at any depth (each folder is opened relative to
its parent with ``O_NOFOLLOW``, so a link swapped in while reading is not followed
either): a link is reported as a link, never read through.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import Literal, NoReturn

from gym._core._errors import ConfigError

__all__ = [
    "LINK_RULE",
    "Kind",
    "confined",
    "link_problem",
    "read_inside",
    "read_regular",
    "read_tree",
    "tree_names",
    "tree_entries",
]

LINK_RULE = "task files are read only as regular files inside the task folder"
"""Why a link (or a fifo, a device) in a task folder is refused."""
Kind = Literal["file", "link", "other"]
"""What a `tree_entries` entry is: a regular file, a symbolic link, anything else."""

_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_DIR = _FILE | os.O_DIRECTORY


def link_problem(rel: str, kind: Kind, rule: str = LINK_RULE) -> str:
    """What is wrong with an entry that is not a regular file, and what to do."""
    if kind == "link":
        return f"{rel} is a symbolic link: {rule}; replace it by the file"
    return f"{rel} is not a regular file (a fifo, a socket or a device): {rule}"


def tree_entries(
    folder: Path, *, contents: bool = True, prune: Callable[[str], bool] | None = None
) -> Iterator[tuple[str, Kind, bytes]]:
    """Every entry under a folder but its folders, in path order, following no link.

    Yields (relative posix path, kind, data): a regular file's bytes (``b""`` unless
    ``contents``), a link's target (the link itself is never followed), ``b""`` for
    anything else. A folder that is itself a link is one entry, ``"."``. Nothing when
    the folder is absent or not a folder.

    Args:
        folder: the folder to walk.
        contents: read the regular files (False: only their names and kinds).
        prune: called with a folder's relative path; True leaves it out, unread (a
            link or a file is never left out).
    """
    try:
        mode = os.lstat(folder).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        yield ".", "link", os.fsencode(os.readlink(folder))
        return
    if not stat.S_ISDIR(mode):
        return
    try:
        fd = os.open(folder, _DIR)
    except OSError:  # swapped for a link (ELOOP) or a file since the lstat
        yield ".", "link", b""
        return
    try:
        yield from _walk(fd, "", contents, prune or (lambda rel: False))
    finally:
        os.close(fd)


def _walk(
    dir_fd: int, prefix: str, contents: bool, prune: Callable[[str], bool]
) -> Iterator[tuple[str, Kind, bytes]]:
    with os.scandir(dir_fd) as it:
        names = sorted(entry.name for entry in it)
    for name in names:
        rel = prefix + name
        try:
            mode = os.lstat(name, dir_fd=dir_fd).st_mode
        except FileNotFoundError:
            continue  # gone since the listing
        if stat.S_ISLNK(mode):
            yield rel, "link", os.fsencode(os.readlink(name, dir_fd=dir_fd))
        elif stat.S_ISDIR(mode):
            if prune(rel):
                continue
            fd = _open(name, dir_fd, _DIR)
            if fd is None:
                yield rel, "link", b""
                continue
            try:
                yield from _walk(fd, rel + "/", contents, prune)
            finally:
                os.close(fd)
        elif not stat.S_ISREG(mode):
            yield rel, "other", b""
        elif not contents:
            yield rel, "file", b""
        else:
            data = _read_fd(name, dir_fd)
            yield (rel, "file", data) if data is not None else (rel, "link", b"")


def _open(name: str, dir_fd: int, flags: int) -> int | None:
    """A descriptor of ``name`` in ``dir_fd``; None when it became a link (ELOOP)."""
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            return None
        raise


def _read_fd(name: str, dir_fd: int) -> bytes | None:
    """A regular file's bytes, opened without following a link; None if it is not one."""
    fd = _open(name, dir_fd, _FILE)
    if fd is None:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_regular(path: Path) -> bytes:
    """The bytes of one file, read only if it is a regular file (a link is not followed).

    Raises:
        ConfigError: it is a symbolic link or not a regular file (the message says so).
        OSError: it cannot be read (absent among others).
    """
    if stat.S_ISLNK(os.lstat(path).st_mode):
        raise ConfigError(link_problem(str(path), "link"))
    parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        data = _read_fd(path.name, parent)
    finally:
        os.close(parent)
    if data is None:
        raise ConfigError(link_problem(str(path), "other"))
    return data


def read_inside(root: Path, rel: str) -> bytes:
    """The bytes of the regular file ``rel`` under ``root``, following no link below ``root``.

    For a file a family's tasks share (a database dump, a policy): each folder of ``rel``
    is opened relative to its parent with ``O_NOFOLLOW``, then the file, so a link on the
    way (or swapped in while reading) is refused, never read through. ``root`` itself is
    opened as named.

    Raises:
        ConfigError: ``rel`` is not a plain relative path, or a part of it is a symbolic
            link or the file is not a regular file (the message names it, and what to do).
        OSError: it cannot be read (absent among others).
    """
    parts = rel.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise ConfigError(f"{rel!r}: a path inside {root}, relative and without '..'")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        for depth, name in enumerate(parts[:-1], 1):
            sub = _open(name, fd, _DIR)
            if sub is None:
                _refuse(root, parts[:depth], fd, folder=True)
            os.close(fd)
            fd = sub
        data = _read_fd(parts[-1], fd)
        if data is None:
            _refuse(root, parts, fd)
        return data
    finally:
        os.close(fd)


_FAMILY_RULE = "a family's shared files are read only as regular files inside its folder"


def _refuse(root: Path, parts: list[str], dir_fd: int, *, folder: bool = False) -> NoReturn:
    """Raise what is wrong with ``parts[-1]`` in ``dir_fd``: a link, else not what it must be."""
    where = "/".join([str(root), *parts])
    if stat.S_ISLNK(os.lstat(parts[-1], dir_fd=dir_fd).st_mode):
        raise ConfigError(link_problem(where, "link", _FAMILY_RULE))
    if folder:
        raise ConfigError(f"{where} is not a folder")
    raise ConfigError(link_problem(where, "other", _FAMILY_RULE))


def read_tree(folder: Path) -> dict[str, bytes]:
    """Every file under a folder: relative posix path -> bytes ({} if absent).

    Regular files only, read without following a link (``__pycache__`` left out).

    Raises:
        ConfigError: the folder is, or holds, a symbolic link or a special file (the
            task loader refuses such a task; see `link_problem`).
    """
    files: dict[str, bytes] = {}
    for rel, kind, data in tree_entries(folder, prune=_pycache):
        if kind != "file":
            where = str(folder) if rel == "." else f"{folder}/{rel}"
            raise ConfigError(link_problem(where, kind))
        files[rel] = data
    return files


def tree_names(folder: Path) -> list[str]:
    """The relative paths `read_tree` would read, in order, without reading a file.

    Regular files only (``__pycache__`` left out, a link or special file skipped: the
    task loader refuses those before anything is read).
    """
    entries = tree_entries(folder, contents=False, prune=_pycache)
    return [rel for rel, kind, _ in entries if kind == "file"]


def _pycache(rel: str) -> bool:
    return rel.rpartition("/")[2] == "__pycache__"


def confined(base: Path, value: str, field: str) -> Path:
    """The path a record's field names, which must lie inside ``base`` (a dataset's folder).

    Relative, with no ``..`` and not ``base`` itself; resolved (links included), it is
    still below ``base``. A dataset's record is data: it never names a host path.

    Raises:
        ConfigError: the value is absolute, climbs out, names the folder itself, or
            resolves outside it; the message names the field.
    """
    parts = PurePosixPath(value).parts
    if not value or value.startswith("/") or "\0" in value or "\\" in value:
        why = "must be a relative path (a file or folder inside the dataset's folder)"
    elif ".." in parts:
        why = "holds '..': a record names a file or folder inside the dataset's folder"
    elif not [p for p in parts if p != "."]:
        why = "names the dataset's folder itself: name a file or folder inside it"
    else:
        found = (base / value).resolve()
        inside = found.is_relative_to(base.resolve()) and found != base.resolve()
        if inside:
            return found
        why = "resolves (through a link) outside the dataset's folder"
    raise ConfigError(f"{field} = {value!r}: {why} ({base})")
