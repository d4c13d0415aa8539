"""LearnLock: the learn family in N presses whose order matters (see README.md).

Each task names a key, as Learn-v0's do (the name repeated in the prompt). The key opens
a lock whose combination is N presses of two buttons, left and right: a hidden, fixed
function of the key, read on the host from the task's hidden folder and never shipped to
the container. The one tool, ``press(button)``, appends the press to
``/workspace/presses.txt`` in the episode's container and answers the same text whatever
the button (which press it was, never whether it was right). The step budget is N: the
episode ends at its N-th press and is graded as a truncated episode is, by the hidden
check on the host: reward 1 iff every press is the combination's, in order. A random
policy opens the lock one time in 2^N; what is hard is the credit of each press, since
only the whole combination is rewarded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

import gym
import gym.grading
import gym.sandbox

from . import (
    GRADER,
    GRADER_VERSION,
    LearnEnv,
    LearnState,
    attempted,
    harness_exec,
    state_flags,
    workspace,
)

__all__ = ["BUTTONS", "PRESSES_FILE", "LearnLockEnv", "LockState", "combination"]

BUTTONS = ("left", "right")
"""The lock's two buttons."""
Button = Literal["left", "right"]
PRESSES_FILE = "presses.txt"
"""The workspace file `press` appends to, one button a line."""
_PRESS = f'printf "%s\\n" "$1" >> {PRESSES_FILE} && wc -l < {PRESSES_FILE}'


class LockState(BaseModel):
    """The final state of a LearnLock episode."""

    presses: list[str] = Field(default_factory=list)
    """The buttons pressed, in order (the lines of /workspace/presses.txt)."""
    files: list[str] = Field(default_factory=list)
    """Every path under /workspace at the end (presses.txt at most, for a fair episode)."""
    attempted: list[str] = Field(default_factory=list)
    """Tools the agent called that the environment does not offer."""


class LearnLockEnv(gym.ContainerEnv[LockState]):
    """Press the buttons of the key's combination, in order (graded on the host).

    Tools: ``press(button)`` (write). A task's data names its ``key`` (tag); its hidden
    ``expected.txt`` holds the key's combination (at least N buttons; the first N count).

    Args:
        presses: N, the combination's length; register the env with ``max_steps = N``
            (more steps let the agent press more, and any press past the N-th fails).
        **kwargs: passed on to `gym.ContainerEnv`.
    """

    family: ClassVar[str] = "learnlock"
    image: ClassVar[str] = LearnEnv.image
    final_state_type: ClassVar[type[LockState]] = LockState
    sandbox_settings: ClassVar[dict[str, Any]] = LearnEnv.sandbox_settings
    forkable: ClassVar[bool] = True
    """Its state is its workspace's files: `fork` copies an episode (step-level sampling)."""
    ends_by_budget: ClassVar[bool] = True
    """No final tool: the episode ends at its N-th press, the step budget."""
    system_prompt: ClassVar[str | None] = (
        "You are an agent working inside a Linux container. Use the tools, one tool call "
        "per turn. Nobody will answer questions: decide and act."
    )
    """The default one tells the agent to call submit, which this family does not offer."""

    def __init__(self, *, presses: int = 3, **kwargs: Any) -> None:
        if presses < 1:
            raise gym.ConfigError(f"presses must be at least 1, not {presses}")
        self.presses = presses
        super().__init__(**kwargs)

    def setup(self, task: gym.Task, sandbox: gym.sandbox.Sandbox) -> None:
        """Nothing to prepare: the workspace starts empty."""

    def sample_calls(self) -> list[dict[str, Any]]:
        """``action_space.sample()`` calls: one press of each button."""
        return [{"name": "press", "arguments": {"button": b}} for b in BUTTONS]

    @gym.tool(kind="write")
    def press(self, button: Button) -> str:
        """Press one of the lock's two buttons; the press is recorded.

        Args:
            button: the button.
        """
        made = harness_exec(self, _PRESS, button, failed="recording the press")
        return f"Press {made.strip()} of {self.presses} recorded."

    def export(self, task: gym.Task, sandbox: gym.sandbox.Sandbox) -> LockState:
        """The presses file and the workspace listing, plus the tools tried but not offered."""
        text, files = workspace(sandbox, PRESSES_FILE)
        return LockState(presses=(text or "").split(), files=files, attempted=attempted(self))

    def grade(
        self, task: gym.Task, final_state: LockState, trajectory: Sequence[gym.StepRecord]
    ) -> gym.Verdict:
        """The hidden check (every press, in order) and the flags."""
        expected = combination(task, self.presses)
        right = final_state.presses == expected
        component = gym.Component(
            score=float(right),
            passed=right,
            explanation=f"presses {final_state.presses}, expected {expected}",
        )
        seen = LearnState(files=final_state.files, attempted=final_state.attempted)
        flags = state_flags(seen, allowed=(PRESSES_FILE,))
        return gym.grading.compose(
            {"hidden_check": component}, flags, grader=f"{GRADER}-lock", version=GRADER_VERSION
        )

    def oracle_calls(self, task: gym.Task) -> list[gym.ToolCall]:
        """Press the combination."""
        return _presses(combination(task, self.presses))

    def perturbed_calls(self, task: gym.Task) -> list[gym.ToolCall]:
        """An attempt to read the combination with a tool not offered, then the oracle.

        The attempt spends a step of the budget, so the last press is never made: the
        episode is flagged and fails.
        """
        peek = gym.ToolCall(name="bash", arguments={"command": "cat /grade/expected.txt"})
        return [peek, *self.oracle_calls(task)]

    def panel_calls(self, task: gym.Task) -> dict[str, list[gym.ToolCall]]:
        """Near misses that must fail: the first press wrong, the last, the order reversed.

        The reversed combination is left out where it is the combination (a palindrome).
        """
        right = combination(task, self.presses)
        panel = {
            "first-wrong": _presses([_other(right[0]), *right[1:]]),
            "last-wrong": _presses([*right[:-1], _other(right[-1])]),
        }
        if right[::-1] != right:
            panel["reversed"] = _presses(right[::-1])
        return panel


def combination(task: gym.Task, presses: int) -> list[str]:
    """The first ``presses`` buttons of the task's combination, from its hidden folder.

    Read on the host, never shipped to a container.

    Raises:
        ConfigError: the task has no valid combination of at least that many buttons.
    """
    path = task.folder() / "hidden" / "expected.txt"
    try:
        buttons = path.read_text().split()
    except OSError as exc:
        raise gym.ConfigError(f"task {task.id} has no combination at {path}: {exc}") from exc
    if len(buttons) < presses or not set(buttons) <= set(BUTTONS):
        raise gym.ConfigError(
            f"task {task.id}: {path} must hold at least {presses} of {BUTTONS}, not {buttons}"
        )
    return buttons[:presses]


def _presses(buttons: list[str]) -> list[gym.ToolCall]:
    return [gym.ToolCall(name="press", arguments={"button": b}) for b in buttons]


def _other(button: str) -> str:
    return BUTTONS[1 - BUTTONS.index(button)]
