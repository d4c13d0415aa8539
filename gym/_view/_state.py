"""An episode's final state for people: a diff against the task's base, or the export itself."""

from __future__ import annotations

import difflib
import functools
import json
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from gym._core._errors import GymError
from gym._view._text import Snippet, snippet

__all__ = ["DiffLine", "FileChange", "FinalState", "final_state", "state_text"]

MAX_DIFF_LINES = 600
MAX_LINE = 2000


class DiffLine(BaseModel):
    """One line of a unified diff."""

    kind: Literal["add", "del", "hunk", "head", "same"]
    text: str


class FileChange(BaseModel):
    """One changed file of a code episode."""

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
def _code_tasks(env_id: str) -> dict[str, Any] | None:
    """Task id -> task of a code environment; None for other families or unknown ids."""
    from gym._envs._code import CodeEnv
    from gym._envs._registry import make

    try:
        env = make(env_id)
    except GymError:
        return None
    try:
        inner = env.unwrapped
        return {t.id: t for t in inner.tasks} if isinstance(inner, CodeEnv) else None
    finally:
        env.close()


def _code_base(env_id: str, task_id: str) -> dict[str, bytes] | None:
    """The files a code task starts from, or None when there is no such code task here."""
    from gym._envs._code import workspace_files

    task = (_code_tasks(env_id) or {}).get(task_id)
    return workspace_files(task, with_git=False) if task is not None else None


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


def _code_export(env_id: str, task_id: str, export: dict[str, Any]) -> tuple[Any, Any] | None:
    """(the parsed code export, the task's base files), or None for other families."""
    from gym._grading import Export

    base = _code_base(env_id, task_id)
    if base is None:
        return None
    try:
        return Export.model_validate(export), base
    except ValidationError:
        return None


def _diffs(parsed: Any, base: dict[str, bytes]) -> list[FileChange]:
    return [_file_diff(p, base.get(p), data) for p, data in sorted(parsed.files.items())]


def _code_state(parsed: Any, base: dict[str, bytes]) -> FinalState:
    outside = [
        f"{c.kind} {c.path}" for c in parsed.changes if parsed.relative(c.path) not in parsed.files
    ]
    note = "the changes were over the export cap: none were exported" if parsed.oversized else ""
    if parsed.links:
        note += f" links not applied: {', '.join(parsed.links)}"
    state = FinalState(kind="diff", files=_diffs(parsed, base), outside=outside, note=note.strip())
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
    """The final state of an episode: a diff for code envs, the export for the others.

    Args:
        env_id: the episode's environment.
        task_id: its task.
        export: the stored export (`EpisodeRow.export`).
        raw: link to the whole text (`state_text`).
    """
    if export is None:
        return FinalState(kind="none", note="no final state was stored for this episode")
    code = _code_export(env_id, task_id, export)
    if code is not None:
        return _code_state(*code)
    text = json.dumps(_shorten(export), indent=2, ensure_ascii=False, default=str)
    return FinalState(kind="export", export=snippet(text, raw))


def state_text(env_id: str, task_id: str, export: dict[str, Any] | None) -> str:
    """The whole final state as text: every diff line, or the export as JSON."""
    if export is None:
        return ""
    code = _code_export(env_id, task_id, export)
    if code is None:
        return json.dumps(export, indent=2, ensure_ascii=False, default=str)
    return "\n".join(line.text for f in _diffs(*code) for line in f.lines) + "\n"
