"""Scripted policies that ship with boxgym: oracle, noop, perturbed oracle."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from gym._core._errors import ConfigError
from gym._core._models import Task
from gym._core._tools import ToolCall
from gym._policy._base import Policy, Turn

if TYPE_CHECKING:
    from gym._envs._env import ContainerEnv

__all__ = ["NoopPolicy", "OraclePolicy", "PerturbedOraclePolicy", "ScriptPolicy", "turn_for"]

_ids = itertools.count(1)


def turn_for(call: ToolCall) -> Turn:
    """A turn that makes one tool call, in OpenAI message format."""
    call = call.model_copy(update={"id": call.id or f"call_{next(_ids)}"})
    return Turn(
        message={"role": "assistant", "content": None, "tool_calls": [call.wire()]}, call=call
    )


class ScriptPolicy(Policy):
    """Replays a fixed list of tool calls, then submits.

    Once the script is exhausted it makes its last call again when that call is the final
    tool: a user who answers after the script's last ``submit`` gets the same final answer,
    not an empty one. Otherwise it submits with no arguments.
    """

    name = "script"

    def __init__(self, calls: list[ToolCall] | None = None) -> None:
        self.calls = list(calls or [])
        self._queue: list[ToolCall] = []
        self._last: ToolCall | None = None

    def script(self, task: Task, env: ContainerEnv[Any]) -> list[ToolCall]:
        """The calls for an episode (the fixed list by default)."""
        return list(self.calls)

    def start(self, task: Task, env: ContainerEnv[Any]) -> None:
        """Load this episode's script."""
        self._queue = self.script(task, env)
        last = self._queue[-1] if self._queue else None
        final = last is not None and _is_final(env, last.name)
        self._last = last if final else None

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        """The next scripted call (the script's last one again once it is exhausted)."""
        if self._queue:
            return turn_for(self._queue.pop(0))
        if self._last is not None:
            return turn_for(self._last.model_copy(update={"id": None}))
        return turn_for(ToolCall(name="submit", arguments={}))


def _is_final(env: ContainerEnv[Any], name: str) -> bool:
    entry = env.tools.get(name)
    return entry is not None and entry[0].kind == "final"


class OraclePolicy(ScriptPolicy):
    """Replays the task's reference solution (the environment's ``oracle_calls``)."""

    name = "oracle"

    def script(self, task: Task, env: ContainerEnv[Any]) -> list[ToolCall]:
        """The reference solution's calls."""
        return list(env.oracle_calls(task))


class NoopPolicy(ScriptPolicy):
    """Submits at once: every well-made task must fail it."""

    name = "noop"


class PerturbedOraclePolicy(ScriptPolicy):
    """The reference solution plus one forbidden write: every such episode must be flagged."""

    name = "perturbed-oracle"

    def script(self, task: Task, env: ContainerEnv[Any]) -> list[ToolCall]:
        """The oracle's calls with the environment's forbidden extra call inserted.

        Raises:
            ConfigError: the family plants no forbidden side effect.
        """
        calls = env.perturbed_calls(task)
        if calls is None:
            raise ConfigError(f"{type(env).__name__} has no perturbed oracle; it cannot be run")
        return list(calls)
