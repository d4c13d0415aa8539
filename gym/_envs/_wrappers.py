"""Wrappers around `ContainerEnv`: grading what an outer step limit cuts short.

Budgets belong to the environment (its ``max_steps`` and ``max_seconds``). The one
wrapper boxgym registers, `GradeOnTruncation`, only makes sure that an episode cut
short by another wrapper (Gymnasium's ``TimeLimit``, from ``max_episode_steps=``) is
exported and graded like any other truncated episode.
"""

from __future__ import annotations

import warnings
from typing import Any, SupportsFloat

import gymnasium

from gym._envs._env import ContainerEnv, env_of

__all__ = ["EpisodeLimits", "GradeOnTruncation"]


class GradeOnTruncation(
    gymnasium.Wrapper[str, dict[str, Any], str, dict[str, Any]],
    gymnasium.utils.RecordConstructorArgs,
):
    """Grade an episode that a wrapper inside this one truncated (``TimeLimit``).

    The environment's own budgets already end and grade its episodes; this wrapper
    only finishes an episode that another wrapper declared truncated while the
    environment was still running it, so that its terminal step carries a verdict.

    Args:
        env: a `ContainerEnv`, possibly wrapped.
    """

    def __init__(self, env: gymnasium.Env[str, dict[str, Any]]) -> None:
        gymnasium.utils.RecordConstructorArgs.__init__(self)
        super().__init__(env)
        self.inner: ContainerEnv[Any] = env_of(env)

    def step(self, action: dict[str, Any]) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """Step; when an inner wrapper truncated a running episode, end and grade it."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        if truncated and not self.inner.done:
            reason = "step limit (max_episode_steps)"
            _, reward, _, _, end = self.inner.end_episode(reason=reason, truncated=True)
            info = {**info, **end}
        return obs, reward, terminated, truncated, info


class EpisodeLimits(GradeOnTruncation):
    """Deprecated: pass ``max_steps`` / ``max_seconds`` to the environment instead.

    Kept so that code and stored specs that name it still work: budgets given here
    apply where the environment has none of its own.

    Args:
        env: a `ContainerEnv`, possibly wrapped.
        max_steps: the most tool calls per episode (None: no limit).
        max_seconds: the most wall-clock seconds per episode (None: no limit).
    """

    def __init__(
        self,
        env: gymnasium.Env[str, dict[str, Any]],
        max_steps: int | None = None,
        max_seconds: float | None = None,
    ) -> None:
        warnings.warn(
            "EpisodeLimits is deprecated: the environment owns its budgets; pass "
            "max_steps and max_seconds to gym.make or the environment",
            DeprecationWarning,
            stacklevel=2,
        )
        super().__init__(env)
        gymnasium.utils.RecordConstructorArgs.__init__(
            self, max_steps=max_steps, max_seconds=max_seconds
        )
        own_steps, own_seconds = self.inner.max_steps, self.inner.max_seconds
        self.inner.set_budgets(
            max_steps=own_steps if own_steps is not None else max_steps,
            max_seconds=own_seconds if own_seconds is not None else max_seconds,
        )
