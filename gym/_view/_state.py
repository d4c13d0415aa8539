"""An episode's final state for people: its family's changes as diffs, or the export itself.

Each family says what its final state changed (`ContainerEnv.changes`: `CodeEnv`'s files
against the task's project, a plugin family's own); a family that says nothing is shown
as its stored export, in JSON.
"""

from __future__ import annotations

import difflib
import functools
import json
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from gym._core._errors import GymError
from gym._envs._changes import Changes
from gym._envs._env import ContainerEnv, env_of
from gym._envs._registry import make
from gym._view._text import Snippet, snippet

__all__ = ["DiffLine", "FileChange", "FinalState", "final_state", "state_text"]

MAX_DIFF_LINES = 600
MAX_LINE = 2000


class DiffLine(BaseModel):
    """One line of a unified diff."""

    kind: Literal["add", "del", "hunk", "head", "same"]
    text: str


class FileChange(BaseModel):
    """One changed file of an episode, as a diff."""

    path: str
    status: Literal["added", "modified", "deleted", "binary"]
    lines: list[DiffLine] = Field(default_factory=list)
    """The unified diff against the task's base (cut to `MAX_DIFF_LINES` in all)."""


class FinalState(BaseModel):
    """What the viewer shows of an episode's final state."""

    kind: Literal["diff", "export", "none"]
    files: list[FileChange] = Field(default_factory=list)
    """Changed files inside the allowed paths (kind ``diff``)."""
    outside: list[str] = Field(default_factory=list)
    """Changes outside the allowed paths: listed, never exported (kind ``diff``)."""
    export: Snippet | None = None
    """The stored export as JSON, long values shortened (kind ``export``)."""
    note: str = ""
    """Why less is shown than one would like."""
    more_lines: int = 0
    """Diff lines left out; the whole diff is at the ``diff`` raw page."""


@functools.lru_cache(maxsize=16)
def _env(env_id: str) -> ContainerEnv[Any] | None:
    """An environment of ``env_id`` to ask for changes (never reset); None if unknown."""
    try:
        env = make(env_id)
    except GymError:
        return None
    env.close()  # `changes` needs no sandbox: the environment is only asked
    return env_of(env)


def _changes(env_id: str, task_id: str, export: dict[str, Any]) -> Changes | None:
    """The family's changes of a stored final state (`ContainerEnv.changes`), or None.

    None when the environment or the task is unknown here, the stored state is not the
    family's final state, or the family shows none.
    """
    env = _env(env_id)
    if env is None:
        return None
    try:
        task = env.task_by_id(task_id)
        state = env.final_state_type.model_validate(export)
    except (GymError, ValidationError):
        return None
    return env.changes(task, state)


def _file_diff(path: str, before: bytes | None, after: bytes | None) -> FileChange:
    status = "added" if before is None else "deleted" if after is None else "modified"
    try:
        old = (before or b"").decode("utf-8").splitlines(keepends=False)
        new = (after or b"").decode("utf-8").splitlines(keepends=False)
    except UnicodeDecodeError:
        return FileChange(path=path, status="binary")
    diff = difflib.unified_diff(old, new, f"a/{path}", f"b/{path}", lineterm="", n=3)
    return FileChange(path=path, status=status, lines=[_line(t) for t in diff])  # type: ignore[arg-type]


def _line(text: str) -> DiffLine:
    if len(text) > MAX_LINE:
        text = f"{text[:MAX_LINE]}... ({len(text) - MAX_LINE} more characters)"
    if text.startswith(("+++", "---")):
        return DiffLine(kind="head", text=text)
    kind = {"+": "add", "-": "del", "@": "hunk"}.get(text[:1], "same")
    return DiffLine(kind=kind, text=text)  # type: ignore[arg-type]


def _shorten(value: Any) -> Any:
    if isinstance(value, str) and len(value) > 400:
        return f"{value[:200]}... ({len(value)} characters)"
    if isinstance(value, dict):
        return {k: _shorten(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shorten(v) for v in value]
    return value


def _diffs(changes: Changes) -> list[FileChange]:
    return [_file_diff(f.path, f.before, f.after) for f in changes.files]


def _diff_state(changes: Changes) -> FinalState:
    state = FinalState(
        kind="diff", files=_diffs(changes), outside=changes.outside, note=changes.note
    )
    _cut(state)
    return state


def _cut(state: FinalState) -> None:
    budget = MAX_DIFF_LINES
    for f in state.files:
        if len(f.lines) > budget:
            state.more_lines += len(f.lines) - budget
            f.lines = f.lines[:budget]
        budget -= len(f.lines)


def final_state(env_id: str, task_id: str, export: dict[str, Any] | None, raw: str) -> FinalState:
    """The final state of an episode: the family's changes as diffs, else the export.

    Args:
        env_id: the episode's environment.
        task_id: its task.
        export: the stored export (`EpisodeRow.export`).
        raw: link to the whole text (`state_text`).
    """
    if export is None:
        return FinalState(kind="none", note="no final state was stored for this episode")
    changes = _changes(env_id, task_id, export)
    if changes is not None:
        return _diff_state(changes)
    text = json.dumps(_shorten(export), indent=2, ensure_ascii=False, default=str)
    return FinalState(kind="export", export=snippet(text, raw))


def state_text(env_id: str, task_id: str, export: dict[str, Any] | None) -> str:
    """The whole final state as text: every diff line, or the export as JSON."""
    if export is None:
        return ""
    changes = _changes(env_id, task_id, export)
    if changes is None:
        return json.dumps(export, indent=2, ensure_ascii=False, default=str)
    return "\n".join(line.text for f in _diffs(changes) for line in f.lines) + "\n"
