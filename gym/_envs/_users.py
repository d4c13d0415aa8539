"""The user an agent works for: who sends the next message when the agent ends its turn.

An episode holds one user turn or several. The first message is the task's prompt; when
the agent calls the final tool (``submit``), the environment asks its `User` for the
next message: a string starts the next turn, None ends (and grades) the episode.

`ScriptedUser`, the default, sends the task's scripted ``turns`` in order. A simulated
user (`gym.policies.SimulatedUser`, a policy of its own) plays the task's ``user``
scenario. A user whose replies come from somewhere worth keeping (a model's raw turn) also
implements `RecordingUser`: the environment records what `raw_turn` returns in its
transcript (`ContainerEnv.user_transcript`).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from gym._core._models import Task

__all__ = ["RecordingUser", "ScriptedUser", "User"]


@runtime_checkable
class User(Protocol):
    """Who answers when the agent ends a turn."""

    def start(self, task: Task, seed: int | None) -> None:
        """Begin an episode of this task (called at every reset, with its seed)."""
        ...

    def reply(self, task: Task, conversation: list[dict[str, Any]]) -> str | None:
        """The next user message, or None to end the episode.

        Args:
            task: the episode's task.
            conversation: the episode so far from the agent's side, in OpenAI chat
                format (user, assistant with ``tool_calls``, tool), as the environment
                rebuilds it from its trace (`ContainerEnv.conversation`).
        """
        ...


@runtime_checkable
class RecordingUser(User, Protocol):
    """A user whose every reply has a raw record worth keeping (a model's turn)."""

    def raw_turn(self) -> dict[str, Any] | None:
        """The raw record behind the last reply (JSON-ready), kept in the transcript."""
        ...


class ScriptedUser:
    """The task's scripted turns (`Task.turns`), in order; None after the last."""

    def __init__(self) -> None:
        self._queue: list[str] = []

    def start(self, task: Task, seed: int | None) -> None:
        """Queue the task's scripted turns."""
        self._queue = list(task.turns)

    def reply(self, task: Task, conversation: list[dict[str, Any]]) -> str | None:
        """The next scripted message, or None once they are all sent."""
        return self._queue.pop(0) if self._queue else None

    def __repr__(self) -> str:
        return "ScriptedUser()"
