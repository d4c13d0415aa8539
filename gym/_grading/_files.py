"""State grader for files: existence and content of files in the final workspace."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from gym._core._models import Component

__all__ = ["file_component"]


def _check(entry: dict[str, Any], files: dict[str, bytes]) -> str | None:
    """None when the entry holds, else why not."""
    path = entry["path"]
    data = files.get(path)
    if not entry.get("exists", True):
        return None if data is None else f"{path} should not exist"
    if data is None:
        return f"{path} is missing"
    text = data.decode("utf-8", errors="replace")
    if "sha256" in entry and hashlib.sha256(data).hexdigest() != entry["sha256"]:
        return f"{path} does not have the expected content"
    if "equals" in entry and text != entry["equals"]:
        return f"{path} does not equal the expected text"
    if "contains" in entry and entry["contains"] not in text:
        return f"{path} does not contain {entry['contains']!r}"
    if "matches" in entry and not re.search(entry["matches"], text, re.M):
        return f"{path} does not match /{entry['matches']}/"
    return None


def file_component(entries: list[dict[str, Any]], files: dict[str, bytes]) -> Component:
    """A gated component over ``[[files]]`` checks of a task.

    Each entry has a ``path`` (relative to the workspace) and any of ``exists``
    (default true), ``equals``, ``contains``, ``matches`` (a regex) or ``sha256``.

    Args:
        entries: the task's file checks.
        files: the final workspace (relative path -> content).
    """
    problems = [p for p in (_check(e, files) for e in entries) if p]
    passed = len(entries) - len(problems)
    explanation = f"{passed}/{len(entries)} file checks hold"
    if problems:
        explanation += ": " + "; ".join(problems[:10])
    return Component(
        score=passed / max(len(entries), 1), passed=not problems, explanation=explanation
    )
