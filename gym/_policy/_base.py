"""The policy contract: given the conversation and the tools, produce the next turn."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, field_validator, model_validator

from gym._core._errors import PolicyError
from gym._core._models import Task
from gym._core._tools import ToolCall

if TYPE_CHECKING:
    from gym._envs._env import ContainerEnv

__all__ = ["TOKENS_MAX", "ContextFull", "Policy", "Turn", "counts"]

TOKENS_MAX = 2**53
"""Token counts at or past this are not counts (no context holds them; a float, as JSON
readers take numbers, cannot hold them exactly): left out of a turn's usage."""


def counts(usage: dict[Any, Any]) -> dict[str, int]:
    """The token counts of a usage record worth keeping: whole numbers in [0, `TOKENS_MAX`).

    A server's usage is its word, not a fact: a negative count, a bool or one too large
    for the store (an episode's sum is an SQLite INTEGER) is left out, as absent.
    """
    return {str(k): v for k, v in usage.items() if type(v) is int and 0 <= v < TOKENS_MAX}


class ContextFull(PolicyError):
    """The conversation has outgrown the model's context.

    The server refused a request that, by the policy's own measure, could exceed it.
    The agent's turns and tool outputs filled the context, so the rollout ends the
    episode truncated and grades it (`gym._run._rollout`); any other `PolicyError` is
    the policy's fault (infra_error). A `PolicyError` still, for every other caller.
    """

    def __init__(self, message: str, *, context_tokens: int) -> None:
        super().__init__(message)
        self.context_tokens = context_tokens
        """The model's context in tokens."""

    @property
    def end_reason(self) -> str:
        """The episode's end reason, in the style of the budgets' (``step limit (30)``)."""
        return f"context full ({self.context_tokens} tokens)"


class Turn(BaseModel):
    """One assistant turn: the message to append and the tool calls to execute.

    ``calls`` holds every call of the message, in order; ``call`` is the first of them
    (None when there is none). Give either: a turn made with ``call`` alone has
    ``calls == [call]``, one made with ``calls`` alone has ``call == calls[0]``.
    """

    message: dict[str, Any]
    """The assistant message in OpenAI chat format (with ``tool_calls`` when it calls one)."""
    call: ToolCall | None = None
    """The first tool call to execute; None when the model produced only text."""
    calls: list[ToolCall] = Field(default_factory=list)
    """Every tool call of the message, in order (the rollout executes each)."""
    parse_error: str = ""
    """Why the model's output could not be read as a tool call (shown to the model)."""
    reasoning: str = ""
    """Reasoning text a server returned apart from the message (kept out of the message:
    some servers refuse it in later requests)."""
    prompt_token_ids: list[int] | None = None
    """Token ids of the prompt as the server tokenized it (for training)."""
    completion_token_ids: list[int] | None = None
    """Token ids the model sampled (for training)."""
    logprobs: list[float] | None = None
    """Log-probabilities of the sampled tokens."""
    usage: dict[str, int] = Field(default_factory=dict)
    """Token counts reported by the server (prompt_tokens, completion_tokens); only
    whole numbers in [0, `TOKENS_MAX`) are kept (`counts`)."""
    latency_s: float = 0.0
    """Seconds the policy took for this turn (including retries)."""
    retries: int = 0
    """How many failed attempts preceded this turn."""
    waited_s: float = 0.0
    """Seconds of `latency_s` spent on those failed attempts and the waits after them:
    the server's failures, not the agent's time (the rollout leaves them out of the
    episode's time budget)."""

    @field_validator("usage", mode="before")
    @classmethod
    def _counts(cls, value: Any) -> Any:
        return counts(value) if isinstance(value, dict) else value

    @model_validator(mode="after")
    def _first_call(self) -> Turn:
        if not self.calls and self.call is not None:
            self.calls = [self.call]
        elif self.calls and self.call is None:
            self.call = self.calls[0]
        elif self.calls and self.call != self.calls[0]:
            raise ValueError("a turn's call must be the first of its calls")
        return self


class Policy:
    """Base of every policy. Subclasses implement `act`; `start` is called per episode."""

    name: str = "policy"

    def params(self) -> dict[str, Any]:
        """The settings that identify this policy in run lineage (model, temperature...)."""
        return {}

    def start(self, task: Task, env: ContainerEnv[Any]) -> None:
        """Called at the start of each episode with its task and (unwrapped) environment.

        Args:
            task: the episode's task.
            env: the environment, through its contract (for example the scripted
                policies read its `oracle_calls`).
        """

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        """The next assistant turn for a conversation."""
        raise NotImplementedError

    def check(self, *, flags: str = "--") -> None:
        """Reach what the policy needs (a model server) before a run stores anything.

        Most policies have nothing to reach: this does nothing. `OpenAIPolicy` asks its
        server for its models.

        Args:
            flags: the prefix of the command line options an error names (``--`` for
                the agent's ``--base-url``, ``--user-`` for the user's).
        """

    def close(self) -> None:
        """Release resources (HTTP clients, models)."""
