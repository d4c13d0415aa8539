"""Unified diffs of a final state against its base files (what a judge reads)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping

__all__ = ["unified_diff"]


def unified_diff(
    base: Mapping[str, bytes],
    changed: Mapping[str, bytes | None],
    *,
    context: int = 3,
    max_chars: int = 60_000,
) -> str:
    """A unified diff of changed files against their base versions.

    Args:
        base: the original files (relative path -> bytes).
        changed: new contents (None: deleted); paths absent here are unchanged.
        context: lines of context around each change.
        max_chars: the diff is cut there, with a marker saying how much was left out.
    """
    parts: list[str] = []
    for rel in sorted(changed):
        new, old = changed[rel], base.get(rel)
        if new == old:
            continue
        old_text, new_text = _decode(old), _decode(new)
        if old_text is None or new_text is None:
            parts.append(f"Binary file {rel} differs\n")
            continue
        lines = difflib.unified_diff(
            old_text.splitlines(keepends=True),
            new_text.splitlines(keepends=True),
            fromfile=f"a/{rel}" if old is not None else "/dev/null",
            tofile=f"b/{rel}" if new is not None else "/dev/null",
            n=context,
        )
        parts.append("".join(line if line.endswith("\n") else line + "\n" for line in lines))
    text = "".join(parts)
    if len(text) > max_chars:
        text = (
            text[:max_chars] + f"\n[... diff truncated: {len(text) - max_chars} more characters]\n"
        )
    return text


def _decode(data: bytes | None) -> str | None:
    """Text of a file (``""`` when absent); None when it is binary or not UTF-8."""
    if data is None:
        return ""
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
