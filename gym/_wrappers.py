"""Episode limits as a wrapper: step and wall-clock budgets end in ``truncated=True``."""

from __future__ import annotations

import time
from typing import Any, SupportsFloat

import gymnasium

__all__ = ["EpisodeLimits"]


class EpisodeLimits(
    gymnasium.Wrapper[str, dict[str, Any], str, dict[str, Any]],
    gymnasium.utils.RecordConstructorArgs,
):
    """Truncate an episode after ``max_steps`` steps or ``max_seconds`` of wall-clock time.

    A truncated episode is still graded (its final state may pass); the terminal
    transition carries the verdict in ``info["verdict"]`` and ``truncated=True``. The
    environment's own ``max_steps`` / ``max_seconds`` arguments (given to
    ``gymnasium.make``) override the registered budgets. A truncation by an inner
    wrapper (Gymnasium's ``TimeLimit``, from ``max_episode_steps=``) is graded too.

    Args:
        env: a `ContainerEnv` (possibly wrapped).
        max_steps: the most tool calls per episode (None: no limit).
        max_seconds: the most wall-clock seconds per episode (None: no limit).
    """

    def __init__(
        self,
        env: gymnasium.Env[str, dict[str, Any]],
        max_steps: int | None = None,
        max_seconds: float | None = None,
    ) -> None:
        gymnasium.utils.RecordConstructorArgs.__init__(
            self, max_steps=max_steps, max_seconds=max_seconds
        )
        super().__init__(env)
        inner = env.unwrapped
        own_steps, own_seconds = (
            getattr(inner, "max_steps", None),
            getattr(inner, "max_seconds", None),
        )
        self.max_steps = own_steps if own_steps is not None else max_steps
        self.max_seconds = own_seconds if own_seconds is not None else max_seconds
        self._steps = 0
        self._started = 0.0

    def reset(self, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        """Reset the env and the budgets."""
        obs, info = self.env.reset(**kwargs)
        self._steps, self._started = 0, time.monotonic()
        if self.max_seconds is not None:
            self.env.unwrapped.deadline = self._started + self.max_seconds  # type: ignore[attr-defined]
        return obs, info

    def step(self, action: dict[str, Any]) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """Step, then end the episode as truncated when a budget is spent."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._steps += 1
        if truncated and "verdict" not in info:
            reason = "step limit (max_episode_steps)"  # an inner TimeLimit truncated it
        elif terminated or truncated:
            return obs, reward, terminated, truncated, info
        else:
            reason = self._exceeded()
        if reason:
            end = self.env.unwrapped.end_episode  # type: ignore[attr-defined]
            _, reward, _, _, end_info = end(reason=reason, truncated=True)
            return obs, reward, False, True, {**info, **end_info}
        return obs, reward, terminated, truncated, info

    def _exceeded(self) -> str:
        if self.max_steps is not None and self._steps >= self.max_steps:
            return f"step limit ({self.max_steps})"
        if self.max_seconds is not None and time.monotonic() - self._started >= self.max_seconds:
            return f"time limit ({self.max_seconds:.0f}s)"
        return ""
