"""Safe tar handling for files crossing the container boundary.

Archives read from a container are hostile: names may be absolute or climb with
``..``, links may point outside, and entries may be devices. Nothing here ever writes
to the host filesystem; archives are parsed into memory with every entry checked.
"""

from __future__ import annotations

import io
import posixpath
import tarfile
from dataclasses import dataclass

from gym._core._errors import UnsafeArchive

__all__ = ["Entry", "check_name", "pack", "unpack"]

_END = 2 * tarfile.BLOCKSIZE
"""Zero bytes that end every archive tar writes: where they are missing, it was cut."""


@dataclass(frozen=True)
class Entry:
    """One entry of an archive read from a container."""

    path: str
    """Path relative to the archive root, normalised, never absolute or climbing."""
    kind: str
    """``file``, ``dir`` or ``symlink``."""
    mode: int
    """Permission bits."""
    data: bytes = b""
    """Contents of a file."""
    target: str = ""
    """Target of a symlink."""


def check_name(name: str) -> str:
    """Normalise an archive member name, rejecting absolute names and ``..``.

    Raises:
        UnsafeArchive: the name is absolute or escapes the root.
    """
    if name.startswith("/") or "\x00" in name:
        raise UnsafeArchive(f"archive entry {name!r} has an absolute or invalid name")
    norm = posixpath.normpath(name)
    if norm == ".." or norm.startswith("../") or "/../" in f"/{name}/":
        raise UnsafeArchive(f"archive entry {name!r} climbs out of its root with '..'")
    return "" if norm == "." else norm


def _check_link(entry_path: str, target: str) -> None:
    if target.startswith("/"):
        raise UnsafeArchive(f"symlink {entry_path!r} points to the absolute path {target!r}")
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(entry_path), target))
    if joined == ".." or joined.startswith("../"):
        raise UnsafeArchive(f"symlink {entry_path!r} -> {target!r} escapes the archive root")


def _entry(archive: tarfile.TarFile, member: tarfile.TarInfo, listing: bool) -> Entry | None:
    path = check_name(member.name)
    if not path:
        return None
    mode = member.mode & 0o7777
    if member.isdir():
        return Entry(path, "dir", mode)
    if member.issym():
        if not listing:
            _check_link(path, member.linkname)
        return Entry(path, "symlink", mode, target=member.linkname)
    if member.isreg():
        fh = archive.extractfile(member)
        return Entry(path, "file", mode, data=fh.read() if fh else b"")
    kind = "hard link" if member.islnk() else "device or fifo"
    if listing:
        return Entry(path, "special", mode, target=member.linkname)
    raise UnsafeArchive(f"archive entry {path!r} is a {kind}, which is never accepted")


def unpack(data: bytes, *, max_bytes: int = 64 << 20, listing: bool = False) -> list[Entry]:
    """Parse a tar archive held in memory into checked entries.

    Args:
        data: the archive bytes.
        max_bytes: the most file content accepted in total.
        listing: list links and special files (kinds ``symlink`` and ``special``, never
            followed nor written anywhere) instead of rejecting the archive: for
            inventories of what an agent left, where such entries are findings.

    Raises:
        UnsafeArchive: an entry is absolute or climbs out, the content exceeds
            ``max_bytes``, the archive has no end (it was cut short), or (unless
            ``listing``) an entry is a device, a fifo, a hard link or an escaping symlink.
    """
    entries: list[Entry] = []
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
            for member in archive:
                if member.size < 0:  # base-256 headers can say so: never subtracted
                    raise UnsafeArchive(f"archive entry {member.name!r} has a negative size")
                total += member.size
                if total > max_bytes:
                    raise UnsafeArchive(f"archive holds more than {max_bytes} bytes")
                entry = _entry(archive, member, listing)
                if entry is not None:
                    entries.append(entry)
            end = archive.offset
    except tarfile.TarError as exc:
        raise UnsafeArchive(f"archive is malformed: {exc}") from exc
    if data[end : end + _END] != bytes(_END):
        raise UnsafeArchive(
            f"archive is cut short: {len(data)} bytes and no end after its last entry "
            "(tar ends an archive with two zero blocks, so a stream cut between entries "
            "would otherwise read as fewer files)"
        )
    return entries


def pack(files: dict[str, bytes], *, mode: int = 0o644, mtime: int = 0) -> bytes:
    """Build a tar archive of files (relative path -> content), deterministic bytes."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:", format=tarfile.GNU_FORMAT) as archive:
        for name in sorted(files):
            info = tarfile.TarInfo(check_name(name))
            info.size = len(files[name])
            info.mode = mode
            info.mtime = mtime
            archive.addfile(info, io.BytesIO(files[name]))
    return buf.getvalue()
