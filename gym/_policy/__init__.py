"""Policies: scripted (oracle, noop, replay), OpenAI-compatible endpoints, local models.

The local and tiny policies constrain decoding to a valid call of an offered tool by
default (`gym._policy._grammar`); the openai policy asks the server for the same
(``tool_choice="required"``).
"""

from __future__ import annotations

import inspect
from typing import Any

from gym._core._errors import ConfigError
from gym._policy._base import ContextFull, Policy, Turn
from gym._policy._local import DEFAULT_MODEL, LocalPolicy, ensure_local_model
from gym._policy._openai import OpenAIPolicy
from gym._policy._parse import parse_tool_call
from gym._policy._scripted import (
    NoopPolicy,
    OraclePolicy,
    PerturbedOraclePolicy,
    ScriptPolicy,
    turn_for,
)
from gym._policy._tiny import TinyPolicy, build_tiny, save_tiny
from gym._policy._user import USERS, NamedUser, SimulatedUser, user_from_name

__all__ = [
    "ContextFull",
    "DEFAULT_MODEL",
    "LocalPolicy",
    "NamedUser",
    "NoopPolicy",
    "OpenAIPolicy",
    "OraclePolicy",
    "POLICIES",
    "PerturbedOraclePolicy",
    "Policy",
    "ScriptPolicy",
    "SimulatedUser",
    "TinyPolicy",
    "Turn",
    "USERS",
    "build_tiny",
    "ensure_local_model",
    "parse_tool_call",
    "policy_from_name",
    "save_tiny",
    "turn_for",
    "user_from_name",
]

POLICIES: dict[str, type[Policy]] = {
    "oracle": OraclePolicy,
    "noop": NoopPolicy,
    "perturbed-oracle": PerturbedOraclePolicy,
    "openai": OpenAIPolicy,
    "local": LocalPolicy,
    "tiny": TinyPolicy,
}
"""The policies the CLI can name, by name."""


def policy_from_name(name: str, **kwargs: Any) -> Policy:
    """A policy made from its CLI name and options.

    Args:
        name: one of `POLICIES` (oracle, noop, perturbed-oracle, openai, local, tiny).
        **kwargs: the policy's constructor arguments (e.g. ``model=...`` for openai).

    Raises:
        ConfigError: unknown name, or options the policy does not take or needs.
    """
    cls = POLICIES.get(name)
    if cls is None:
        raise ConfigError(f"unknown policy {name!r}; known policies: {', '.join(sorted(POLICIES))}")
    signature = inspect.signature(cls.__init__)
    options = [p for p in list(signature.parameters)[1:] if p not in ("transport",)]
    try:
        signature.bind(None, **kwargs)
    except TypeError as exc:
        raise ConfigError(
            f"policy {name!r}: {exc}; its options: {', '.join(options) or 'none'}"
        ) from None
    return cls(**kwargs)
