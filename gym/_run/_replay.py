"""The replay policy: the tool calls of a stored episode, played again."""

from __future__ import annotations

import shlex
from typing import Any

from gym._core._errors import ConfigError
from gym._core._models import Task
from gym._core._tools import ToolCall
from gym._envs._env import ContainerEnv
from gym._policy import ScriptPolicy
from gym._store import Store

__all__ = ["ReplayPolicy"]


class ReplayPolicy(ScriptPolicy):
    """Replays stored tool calls.

    The source is ``RUN/EPISODE`` (that episode's calls for every task) or ``RUN`` (for
    each task, the first stored episode of that run with the same env and task).
    """

    name = "replay"

    def __init__(self, source: str, *, db: str | None = None) -> None:
        super().__init__()
        self.store = Store(db)
        run_part, _, episode_part = source.partition("/")
        self.run = self.store.run(run_part)
        self.episode = (
            self.store.episode(episode_part, run_id=self.run.id) if episode_part else None
        )
        self._first: dict[tuple[str, str], str] | None = None

    def params(self) -> dict[str, Any]:
        """The replayed source."""
        return {"run": self.run.id, "episode": self.episode.id if self.episode else None}

    def script(self, task: Task, env: ContainerEnv[Any]) -> list[ToolCall]:
        """The stored calls for this task."""
        episode_id = (
            self.episode.id if self.episode else self._first_episodes().get((env.env_id, task.id))
        )
        if episode_id is None:
            raise ConfigError(f"run {self.run.id} has no episode of {env.env_id} {task.id}")
        return self.store.calls(episode_id)

    def check_plan(self, planned: list[tuple[str, str]]) -> None:
        """Refuse a plan with a task the replayed run has no episode of, before any is stored.

        Args:
            planned: the run's (env id, task id) pairs.

        Raises:
            ConfigError: some task has no episode to replay; the message lists the tasks
                the replayed run has, as ``--tasks`` options.
        """
        if self.episode is not None:
            return  # one episode's calls, for every task
        have = self._first_episodes()
        missing = [pair for pair in dict.fromkeys(planned) if pair not in have]
        if not missing:
            return
        envs = {env_id for env_id, _ in planned}
        tasks = sorted({task for env_id, task in have if env_id in envs})
        shown = " ".join(f"--tasks {shlex.quote(t)}" for t in tasks[:8])
        more = f" (and {len(tasks) - 8} more)" if len(tasks) > 8 else ""
        env_id, task_id = missing[0]
        raise ConfigError(
            f"run {self.run.id} has no episode of {len(missing)} of the {len(set(planned))} "
            f"planned tasks ({env_id} {task_id} first); replay the tasks it has: "
            + (f"{shown}{more}" if tasks else "it has none of these environments")
        )

    def close(self) -> None:
        """Close the store."""
        self.store.close()

    def _first_episodes(self) -> dict[tuple[str, str], str]:
        """(env id, task id) -> the first stored episode of the run, read once."""
        if self._first is None:
            self._first = {}
            for e in self.store.episodes(self.run.id):
                self._first.setdefault((e.env_id, e.task_id), e.id)
        return self._first
