"""A typed OpenEnv client for `gym serve`: openenv-core's `EnvClient` with boxgym's models.

Any OpenEnv client drives the server (``GenericEnvClient`` sends and returns plain
dicts); this one sends a `ToolAction` and returns a `ToolObservation` and an
`EpisodeState`, checked on arrival.
"""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from gym._serve._models import EpisodeState, ToolAction, ToolObservation

__all__ = ["ServeClient"]


class ServeClient(EnvClient[ToolAction, ToolObservation, EpisodeState]):
    """An async client of one session of `gym serve` (``.sync()`` for a blocking one).

    ``ServeClient(base_url="http://127.0.0.1:8000")``, then ``await client.reset(task_id=...)``,
    ``await client.step(ToolAction(tool="submit"))``, ``await client.state()``.
    """

    def _step_payload(self, action: ToolAction) -> dict[str, Any]:
        return action.model_dump(mode="json", exclude_defaults=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[ToolObservation]:
        reward, done = payload.get("reward"), bool(payload.get("done", False))
        fields = {**payload.get("observation", {}), "reward": reward, "done": done}
        return StepResult(ToolObservation.model_validate(fields), reward=reward, done=done)

    def _parse_state(self, payload: dict[str, Any]) -> EpisodeState:
        return EpisodeState.model_validate(payload)
