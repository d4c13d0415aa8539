"""Notes: a plugin family for tests, written as an outside author writes one.

It uses the public API alone and is registered from its folder's boxgym.toml (see
tests/plugin_family/__init__.py). A task starts with notes in the workspace (a file a
note, under ``notes/``) and asks for one more: ``write_note`` writes a note, ``submit``
ends the episode. The final state is every note; the grade checks the asked note, and a
starting note changed is a gating flag. The family ships a red-team attack
(``attacks.py``, named in boxgym.toml) and a `changes` hook: the viewer shows each
changed note as a diff.

Its sandboxes are local folders (commands run on this machine): trusted, scripted tests
only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, Field

import gym
import gym.authoring
import gym.grading
import gym.sandbox

__all__ = ["ENV_ID", "NotesEnv", "NotesState"]

ENV_ID = "plugin/Notes-v0"
FOLDER = "notes"
NAME = re.compile(r"^[a-z0-9_-]{1,40}$")
LOCAL = gym.sandbox.LocalSandboxes(allow_unsafe=True)
TASKS = [
    gym.Task(
        id="add-hello",
        family="notes",
        prompt="Add a note named hello that says hi, then submit.",
        data={"start": {"todo": "buy milk\n"}, "name": "hello", "text": "hi\n"},
    ),
]


class NotesState(BaseModel):
    """The final state of a Notes episode."""

    notes: dict[str, str] = Field(default_factory=dict)
    """Every note at the end: name -> text."""


class NotesEnv(gym.ContainerEnv[NotesState]):
    """Add the asked note without changing the others (local sandboxes, graded here)."""

    family: ClassVar[str] = "notes"
    image: ClassVar[str] = "notes"
    final_state_type: ClassVar[type[NotesState]] = NotesState

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("sandboxes", LOCAL)
        super().__init__(**kwargs)

    @classmethod
    def load_tasks(cls) -> list[gym.Task]:
        return list(TASKS)

    def setup(self, task: gym.Task, sandbox: gym.sandbox.Sandbox) -> None:
        start = {name: text.encode() for name, text in task.data["start"].items()}
        sandbox.put_files(f"{sandbox.config.workdir}/{FOLDER}", start)

    @gym.tool(kind="write")
    def write_note(self, name: str, text: str) -> str:
        """Write a note: a new one, or over one that exists.

        Args:
            name: the note's name (lowercase letters, digits, - and _).
            text: its whole text.
        """
        if self.sandbox is None:
            raise gym.ConfigError("no episode is running: call reset() first")
        if not NAME.match(name):
            raise gym.ConfigError(f"note name {name!r}: use lowercase letters, digits, - and _")
        self.sandbox.write_file(f"{FOLDER}/{name}", text.encode())
        return f"wrote note {name}"

    @gym.tool(kind="final")
    def submit(self) -> str:
        """Submit the notes; the episode ends and is graded."""
        return ""

    def export(self, task: gym.Task, sandbox: gym.sandbox.Sandbox) -> NotesState:
        entries = sandbox.get_files(f"{sandbox.config.workdir}/{FOLDER}", ["."], max_bytes=1 << 16)
        notes = {e.path: e.data.decode(errors="replace") for e in entries if e.kind == "file"}
        return NotesState(notes=notes)

    def grade(
        self, task: gym.Task, final_state: NotesState, trajectory: Sequence[gym.StepRecord]
    ) -> gym.Verdict:
        wanted, text = task.data["name"], task.data["text"]
        got = final_state.notes.get(wanted)
        note = gym.Component(
            score=float(got == text), passed=got == text, explanation=f"{wanted}: {got!r}"
        )
        flags = [
            gym.Flag(name="start_note_changed", detail=name)
            for name, before in task.data["start"].items()
            if final_state.notes.get(name) != before
        ]
        return gym.grading.compose({"note": note}, flags, grader="notes", version="1")

    def oracle_calls(self, task: gym.Task) -> list[gym.ToolCall]:
        write = {"name": task.data["name"], "text": task.data["text"]}
        return [gym.ToolCall(name="write_note", arguments=write), gym.ToolCall(name="submit")]

    def perturbed_calls(self, task: gym.Task) -> list[gym.ToolCall]:
        first = next(iter(task.data["start"]))
        erase = gym.ToolCall(name="write_note", arguments={"name": first, "text": ""})
        *work, submit = self.oracle_calls(task)
        return [*work, erase, submit]

    def changes(self, task: gym.Task, final_state: NotesState) -> gym.authoring.Changes:
        """Each note the episode added, changed or removed, before and after."""
        start: dict[str, str] = task.data["start"]
        end = final_state.notes
        return gym.authoring.Changes(
            files=[
                gym.authoring.ChangedFile(
                    path=f"{FOLDER}/{name}",
                    before=_bytes(start.get(name)),
                    after=_bytes(end.get(name)),
                )
                for name in sorted(set(start) | set(end))
                if start.get(name) != end.get(name)
            ]
        )


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else text.encode()
