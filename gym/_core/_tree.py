"""Folders of files read into memory: a low-layer helper shared by grading and the envs."""

from __future__ import annotations

from pathlib import Path

__all__ = ["read_tree"]


def read_tree(folder: Path) -> dict[str, bytes]:
    """Every file under a folder: relative posix path -> bytes ({} if absent)."""
    if not folder.is_dir():
        return {}
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }
