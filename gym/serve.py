"""Serving an environment to trainers over the OpenEnv protocol, for people who train.

``gym serve boxgym/PyFunc-v0`` on the command line; from Python::

    >>> from gym.serve import ServeConfig, serve
    >>> serve(ServeConfig(env_id="boxgym/PyFunc-v0", port=8000))   # doctest: +SKIP

Any OpenEnv client (openenv-core's ``GenericEnvClient``, or the typed `ServeClient`)
then runs episodes, one per WebSocket session, many sessions at once: reset gives the
task's prompt, tools and system prompt; each step is a tool call (`ToolAction`); the
step that ends the episode carries its verdict (`ToolObservation`: outcome, reward,
flags). docs/serving.md has the protocol mapping, concurrency and session timeouts.

`ServeConfig`, `serve`, `create_app` and `MAX_CALLS` (the most calls one step makes)
import without openenv-core; the models, the environment and the client need it
(``pip install 'boxgym[openenv]'``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from gym._core._errors import ConfigError
from gym._serve._app import ServeConfig, create_app, serve
from gym._serve._limits import MAX_CALLS

if TYPE_CHECKING:
    from gym._serve._client import ServeClient
    from gym._serve._environment import BoxgymEnvironment
    from gym._serve._models import Call, EpisodeState, ToolAction, ToolObservation

__all__ = [
    "MAX_CALLS",
    "BoxgymEnvironment",
    "Call",
    "EpisodeState",
    "ServeClient",
    "ServeConfig",
    "ToolAction",
    "ToolObservation",
    "create_app",
    "serve",
]

_NEEDS_OPENENV = {
    "BoxgymEnvironment": "gym._serve._environment",
    "Call": "gym._serve._models",
    "EpisodeState": "gym._serve._models",
    "ServeClient": "gym._serve._client",
    "ToolAction": "gym._serve._models",
    "ToolObservation": "gym._serve._models",
}


def __getattr__(name: str) -> Any:
    """The names built on openenv-core, imported on first use."""
    module = _NEEDS_OPENENV.get(name)
    if module is None:
        raise AttributeError(f"module 'gym.serve' has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(module), name)
    except ImportError as exc:
        raise ConfigError(
            f"gym.serve.{name} needs openenv-core ({exc}): pip install 'boxgym[openenv]'"
        ) from exc
    globals()[name] = value
    return value
