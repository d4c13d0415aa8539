"""What crosses the OpenEnv protocol: the action, the observation and the state.

Each is a subclass of openenv-core's own model (`openenv.core.env_server.types`), so the
server's ``/schema`` describes them and any OpenEnv client can build and read them as
plain JSON. OpenEnv leaves an observation's ``metadata`` out of what it sends: nothing
here lives there.
"""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.types import Action, Observation, State
from pydantic import AliasChoices, BaseModel, Field, field_validator, model_validator

from gym._core._models import Outcome
from gym._serve._limits import MAX_CALLS

__all__ = ["MAX_CALLS", "Call", "EpisodeState", "ToolAction", "ToolObservation"]

_TOOL = AliasChoices("tool", "name")
"""A call names its tool as ``tool`` (OpenEnv's examples) or ``name`` (OpenAI's calls)."""


class Call(BaseModel):
    """One tool call of a step that makes several (an assistant turn's parallel calls)."""

    tool: str = Field(validation_alias=_TOOL)
    """The tool's name (``name`` is accepted too)."""
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    """The call's arguments: an object, or its JSON text."""
    id: str | None = None
    """The call's id in the conversation, if the client keeps one."""


class ToolAction(Action):
    """One step: a tool call, several in order (``calls``), or the assistant's plain text.

    ``{"tool": "bash", "arguments": {"command": "ls"}}`` is one call; ``{"calls": [...]}``
    runs each in order and stops at the one that ends the episode (or the user's turn);
    neither: ``content`` is the assistant's answer without a tool call, which the
    environment answers as an invalid call, as it does in `gym run`.
    """

    tool: str = Field(default="", validation_alias=_TOOL)
    """The tool's name (``name`` is accepted too); empty when ``calls`` is given."""
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    """The call's arguments: an object, or its JSON text."""
    calls: list[Call] = Field(default_factory=list, max_length=MAX_CALLS)
    """Several calls, run in order within this one step (instead of ``tool``): at most
    `MAX_CALLS`."""
    content: str | None = None
    """The text of the assistant message that made the call(s): the trajectory graders
    read it (a success claimed without one is flagged)."""

    @field_validator("calls", mode="before")
    @classmethod
    def _few_calls(cls, calls: Any) -> Any:
        """Refuse a long list before reading any of its calls."""
        if isinstance(calls, list) and len(calls) > MAX_CALLS:
            raise ValueError(f"a step makes at most {MAX_CALLS} calls, not {len(calls)}")
        return calls

    @model_validator(mode="after")
    def _one_form(self) -> ToolAction:
        if self.tool and self.calls:
            raise ValueError("give either `tool` (one call) or `calls` (several), not both")
        return self


class ToolObservation(Observation):
    """What a reset or a step returns (``done`` and ``reward`` travel beside it).

    At reset: the task's prompt as ``text``, with the tools and the system prompt. At a
    step: the tool's output. At the step that ends the episode (``done``): the verdict.
    ``reward`` is the verdict's at the end (None for ``infra_error``: never 0 or 1) and
    0.0 before it, as the Gymnasium environment's.
    """

    text: str = ""
    """The prompt (reset), the tool's output (step), or the end of the episode."""
    env_id: str = ""
    """The environment id (``boxgym/Name-vN``)."""
    task_id: str = ""
    """The episode's task."""
    tools: list[dict[str, Any]] = Field(default_factory=list)
    """The episode's tool schemas in OpenAI format (reset only)."""
    system_prompt: str | None = None
    """The system prompt to put first in the conversation (reset only)."""
    outputs: list[str] = Field(default_factory=list)
    """One output per call of a ``calls`` step, in order (a call left unrun says so)."""
    user: str | None = None
    """The next user message, when the final tool ended a user turn that is not the last."""
    turn: int = 0
    """The index of the current user turn (0: the task's prompt)."""
    truncated: bool = False
    """The episode ended on a spent budget (steps or seconds), graded all the same."""
    outcome: Outcome | None = None
    """``pass``, ``fail`` or ``infra_error`` once the episode is over; None before."""
    flags: list[str] = Field(default_factory=list)
    """The names of the verdict's flags (forbidden side effects, tamper signals)."""
    verified: bool = False
    """Passed with no flag at all: the only episodes fit for training."""
    verdict: dict[str, Any] | None = None
    """The whole verdict (outcome, reward, components, flags, lineage) once the episode
    is over; None before, and for an infrastructure failure that left none."""
    end_reason: str = ""
    """Why the episode ended: the final tool, a budget, or the infrastructure failure."""


class EpisodeState(State):
    """The session's episode: its id and steps (OpenEnv's), its environment and task."""

    env_id: str = ""
    """The environment id."""
    task_id: str | None = None
    """The task of the current episode (None before the first reset)."""
    split: str | None = None
    """The task's split."""
    turn: int = 0
    """The index of the current user turn."""
    done: bool = True
    """No episode is running (before the first reset, or after its end)."""
    outcome: Outcome | None = None
    """The outcome of the episode once it is over."""
    sandbox: str | None = None
    """The agent sandbox's id while the episode holds one (``lazy`` until its first
    command starts the container, which carries the label
    ``boxgym.episode=sandbox-<id>``); None once given back."""
