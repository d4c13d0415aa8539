"""A toy environment family for unit tests: no Docker, graded in milliseconds.

`ToyEnv` is `gym.CodeEnv` (its bash, read_file, write_file and submit tools, its export
of the workspace, its oracle and perturbed calls) over `gym.sandbox.LocalSandboxes`, with a
grade computed here: ``answer.txt`` must hold the task's ``expected`` text, and changes
outside the allowed paths are flagged as for the real code families. It is registered
as ``toy/Answer-v0`` when this module is imported.

Not a security boundary: the commands run on this machine. Only for scripted, trusted
episodes in tests of env, limit, resume, rollout and runner logic.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import gym
import gym.authoring
import gym.grading
import gym.sandbox
from gym._grading import code_flags
from gym._grading._code import CodeTaskKeys

ENV_ID = "toy/Answer-v0"
SEEDS = Path(__file__).resolve().parent / "toy_seeds"
LOCAL = gym.sandbox.LocalSandboxes(allow_unsafe=True)


class ToyKeys(CodeTaskKeys):
    """A toy task's task.toml keys: a code task's, and the answer it expects."""

    expected: str = ""


class ToyEnv(gym.CodeEnv):
    """Write the expected answer into answer.txt (local sandboxes, local grading)."""

    family: ClassVar[str] = "toy"
    task_keys: ClassVar[type[gym.authoring.TaskKeys]] = ToyKeys
    image: ClassVar[str] = "toy"

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("sandboxes", LOCAL)
        super().__init__(**kwargs)

    @classmethod
    def load_tasks(cls) -> list[gym.Task]:
        return gym.load_tasks(SEEDS, cls.family)

    def grade(
        self, task: gym.Task, final_state: gym.grading.Export, trajectory: Sequence[gym.StepRecord]
    ) -> gym.Verdict:
        files = final_state.applied_to(gym.authoring.workspace_files(task, with_git=False))
        answer = files.get("answer.txt", b"").decode(errors="replace").strip()
        expected = str(task.data["expected"])
        component = gym.Component(
            score=float(answer == expected),
            passed=answer == expected,
            explanation=f"answer {answer!r}, expected {expected!r}",
        )
        flags = code_flags(final_state, task.allowed_paths)
        return gym.grading.compose({"answer": component}, flags, grader="toy", version="1")


gym.register(ENV_ID, f"{__name__}:ToyEnv", max_steps=8, max_seconds=120)


def write(content: str, path: str = "answer.txt") -> dict[str, Any]:
    """A write_file action."""
    return {"name": "write_file", "arguments": {"path": path, "content": content}}


def bash(command: str) -> dict[str, Any]:
    """A bash action."""
    return {"name": "bash", "arguments": {"command": command}}


SUBMIT: dict[str, Any] = {"name": "submit", "arguments": {}}
