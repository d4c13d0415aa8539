"""LearnSteps: the learn family in three steps whose order matters (see README.md).

The key is no longer in the prompt: it is written on a card in one of three drawers of
the episode's container (``/workspace/drawers/left``, ``middle``, ``right``; the others
are empty). The drawers are closed until the agent looks at them: ``look()`` opens them
and lists which one holds a card, ``open(drawer)`` reads one (an open drawer only), and
``submit(choice)`` ends the episode as in Learn-v0. Only the final answer is rewarded,
by the same hidden check on the host: the door the key opens.

The key is host-side only: a task's ``key`` (its task.toml's ``[tags]`` or top level)
is kept in its ``data``, never in its tags, which reset's info, the store and reports
carry (`LearnStepsEnv.load_tasks`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import gym
import gym.authoring
import gym.grading
import gym.sandbox

from . import (
    ANSWER_FILE,
    GRADER,
    GRADER_VERSION,
    LearnEnv,
    LearnState,
    harness_exec,
    hidden_answer,
    state_flags,
)

__all__ = ["DRAWERS", "LearnStepsEnv"]

DRAWERS = ("left", "middle", "right")
"""The drawers of every task; the task's ``card`` names the one that holds the key."""
Drawer = Literal["left", "middle", "right"]
OPENED = "drawers/.open"
"""The marker `look` leaves: the drawers are open."""
_LOOK = (
    ": > .open && for d in left middle right; do "
    'if [ -s "$d" ]; then echo "$d: a card"; else echo "$d: empty"; fi; done'
)
_OPEN = 'if [ -e .open ]; then cat -- "$1"; else echo "The drawers are closed: look first."; fi'


class LearnStepsKeys(gym.authoring.TaskKeys):
    """A LearnSteps task's task.toml keys."""

    card: Literal["left", "middle", "right"]
    """The drawer that holds the task's card (one of `DRAWERS`)."""
    key: str = ""
    """The key named on the card (else the task's ``key`` tag)."""


class LearnStepsEnv(LearnEnv):
    """Look at the drawers, open the one with the card, submit the door its key opens.

    Tools: ``look()``, ``open(drawer)``, ``submit(choice)`` (final). A task's data names
    its ``card`` drawer and its ``key`` (host-side, in its data); its hidden answer is
    the key's door.
    """

    family: ClassVar[str] = "learnsteps"
    task_keys: ClassVar[type[gym.authoring.TaskKeys]] = LearnStepsKeys
    forkable: ClassVar[bool] = True
    """Its state is its workspace's files: `fork` copies an episode (step-level sampling)."""
    system_prompt: ClassVar[str | None] = None

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(leaky=False, **kwargs)

    @classmethod
    def load_tasks(cls) -> list[gym.Task]:
        """The family's tasks, each one's key moved out of its tags into its data.

        A task's tags are in reset's info (what a policy or a trainer may put in a
        prompt), its stored episodes and reports by tag; the key is what the agent must
        find in the drawers, so only the harness reads it (`setup`).
        """
        tasks = super().load_tasks()
        tasks[:] = [_keyless(t) for t in tasks]  # in place: a task list keeps its problems
        return tasks

    def setup(self, task: gym.Task, sandbox: gym.sandbox.Sandbox) -> None:
        """Three closed drawers: the card (the key's name, repeated) in the task's one."""
        card, key = _card(task), _key(task)
        text = f"A card. The name on it, over and over: {' '.join([key] * 40)}\n"
        files = {d: (text.encode() if d == card else b"") for d in DRAWERS}
        sandbox.put_files(f"{sandbox.config.workdir}/drawers", files, via_shell=True)

    def sample_calls(self) -> list[dict[str, Any]]:
        """``action_space.sample()`` calls: look, open each drawer, submit each option."""
        opens = [{"name": "open", "arguments": {"drawer": d}} for d in DRAWERS]
        return [{"name": "look", "arguments": {}}, *opens, *super().sample_calls()]

    @gym.tool(kind="read")
    def look(self) -> str:
        """Open the drawers and list them: which one holds a card."""
        return self._in_drawers(_LOOK)

    @gym.tool(kind="read")
    def open(self, drawer: Drawer) -> str:
        """Read what is in one drawer (the drawers must be open: look first).

        Args:
            drawer: the drawer.
        """
        return self._in_drawers(_OPEN, drawer)

    def _in_drawers(self, script: str, *args: str) -> str:
        if self.sandbox is None:
            raise gym.ConfigError("no episode is running: call reset() first")
        drawers = f"{self.sandbox.config.workdir}/drawers"
        return harness_exec(self, script, *args, failed="the drawers", cwd=drawers).rstrip("\n")

    def grade(
        self, task: gym.Task, final_state: LearnState, trajectory: Sequence[gym.StepRecord]
    ) -> gym.Verdict:
        """The hidden check (the right door) and the flags; the drawers are the task's."""
        expected = hidden_answer(task)
        right = final_state.answer == expected
        component = gym.Component(
            score=float(right),
            passed=right,
            explanation=f"answer {final_state.answer!r}, expected {expected!r}",
        )
        allowed = {ANSWER_FILE, OPENED, *(f"drawers/{d}" for d in DRAWERS)}
        flags = state_flags(final_state, allowed=allowed)
        return gym.grading.compose(
            {"hidden_check": component}, flags, grader=f"{GRADER}-steps", version=GRADER_VERSION
        )

    def oracle_calls(self, task: gym.Task) -> list[gym.ToolCall]:
        """Look, open the card's drawer, submit the hidden answer."""
        return [
            gym.ToolCall(name="look", arguments={}),
            gym.ToolCall(name="open", arguments={"drawer": _card(task)}),
            gym.ToolCall(name="submit", arguments={"choice": hidden_answer(task)}),
        ]


def _keyless(task: gym.Task) -> gym.Task:
    """The task with its ``key`` tag moved into its data (unchanged when it has none)."""
    if "key" not in task.tags:
        return task
    tags = {name: value for name, value in task.tags.items() if name != "key"}
    return task.model_copy(update={"tags": tags, "data": {**task.data, "key": task.tags["key"]}})


def _key(task: gym.Task) -> str:
    """The key named on the task's card (host-side, in its data).

    Raises:
        ConfigError: the task names no key.
    """
    key = task.data.get("key")
    if not isinstance(key, str) or not key:
        raise gym.ConfigError(f"task {task.id}: no key (task.toml's key, or tags.key)")
    return key


def _card(task: gym.Task) -> str:
    """The drawer that holds the task's card.

    Raises:
        ConfigError: the task names none of `DRAWERS`.
    """
    card = task.data.get("card")
    if card not in DRAWERS:
        raise gym.ConfigError(f"task {task.id}: card must be one of {DRAWERS}, not {card!r}")
    return str(card)
