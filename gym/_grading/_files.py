"""State grader for files: existence and content of files in the final workspace."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gym._core._errors import ConfigError
from gym._core._models import Component

__all__ = ["FileCheck", "file_component"]


class FileCheck(BaseModel):
    """One ``[[files]]`` check of a task.toml: a file of the final workspace, and what of it."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    path: str = Field(min_length=1)
    """The file, relative to the workspace."""
    exists: bool = True
    """Whether it must exist (false: it must not; nothing else is then checked)."""
    equals: str | None = None
    """Its whole text."""
    contains: str | None = None
    """Text it holds."""
    matches: str | None = None
    """A regular expression searched in its text (multiline)."""
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    """The sha256 of its bytes, in lowercase hex."""

    @field_validator("matches")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value, re.M)
            except re.error as exc:
                raise ValueError(f"not a regular expression: {exc}") from None
        return value


def _check(entry: FileCheck, files: dict[str, bytes]) -> str | None:
    """None when the entry holds, else why not."""
    path = entry.path
    data = files.get(path)
    if not entry.exists:
        return None if data is None else f"{path} should not exist"
    if data is None:
        return f"{path} is missing"
    text = data.decode("utf-8", errors="replace")
    if entry.sha256 is not None and hashlib.sha256(data).hexdigest() != entry.sha256:
        return f"{path} does not have the expected content"
    if entry.equals is not None and text != entry.equals:
        return f"{path} does not equal the expected text"
    if entry.contains is not None and entry.contains not in text:
        return f"{path} does not contain {entry.contains!r}"
    if entry.matches is not None and not re.search(entry.matches, text, re.M):
        return f"{path} does not match /{entry.matches}/"
    return None


def file_component(entries: list[dict[str, Any]], files: dict[str, bytes]) -> Component:
    """A gated component over ``[[files]]`` checks of a task.

    Each entry has a ``path`` (relative to the workspace) and any of ``exists``
    (default true), ``equals``, ``contains``, ``matches`` (a regex) or ``sha256``.

    Args:
        entries: the task's file checks.
        files: the final workspace (relative path -> content).

    Raises:
        ConfigError: an entry is not a `FileCheck` (an unknown key never passes unchecked).
    """
    try:
        checks = [FileCheck.model_validate(e) for e in entries]
    except ValidationError as exc:
        raise ConfigError(f"[[files]]: {exc}") from None
    problems = [p for p in (_check(e, files) for e in checks) if p]
    passed = len(entries) - len(problems)
    explanation = f"{passed}/{len(entries)} file checks hold"
    if problems:
        explanation += ": " + "; ".join(problems[:10])
    return Component(
        score=passed / max(len(entries), 1), passed=not problems, explanation=explanation
    )
