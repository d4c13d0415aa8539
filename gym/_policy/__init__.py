"""Policies: scripted (oracle, noop, replay), OpenAI-compatible endpoints, local models."""

from gym._policy._base import Policy, Turn
from gym._policy._scripted import (
    NoopPolicy,
    OraclePolicy,
    PerturbedOraclePolicy,
    ScriptPolicy,
    turn_for,
)

__all__ = [
    "NoopPolicy",
    "OraclePolicy",
    "PerturbedOraclePolicy",
    "Policy",
    "ScriptPolicy",
    "Turn",
    "turn_for",
]
