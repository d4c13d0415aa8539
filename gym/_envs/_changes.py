"""What an episode changed, as people read it: the answer of `ContainerEnv.changes`.

A family turns its stored final state into `Changes`; the viewer shows each
`ChangedFile` as a diff of its text before and after, and lists what the final state
only names (changes outside the allowed paths, never exported).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = ["ChangedFile", "Changes"]


class ChangedFile(BaseModel):
    """One thing an episode changed, with its content before and after.

    A file of the workspace, or anything a family shows as one (a table's rows as
    text, a record of a service).
    """

    path: str
    """Its name as people read it (a path relative to the workspace, a table's name)."""
    before: bytes | None = None
    """Its content at the task's start; None when the episode created it."""
    after: bytes | None = None
    """Its content at the episode's end; None when the episode deleted it."""


class Changes(BaseModel):
    """An episode's changes, from its stored final state (see `ContainerEnv.changes`)."""

    files: list[ChangedFile] = Field(default_factory=list)
    """The changes with their content, in the order to show them."""
    outside: list[str] = Field(default_factory=list)
    """Changes the final state names without their content (``modified /etc/hosts``:
    outside the allowed paths, never exported)."""
    note: str = ""
    """Why less is shown than was changed (an export over its cap, links not applied)."""
