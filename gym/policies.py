"""Policies, for people who drive environments with an agent or write one.

A `Policy` answers a conversation and the offered tool schemas with a `Turn` (one
tool call, with the token ids and logprobs a trainer needs). The scripted ones ship
with the library: `OraclePolicy` (replays the task's reference solution),
`NoopPolicy` (submits at once), `PerturbedOraclePolicy` (the oracle plus one write
outside the allowed paths), `ScriptPolicy` (calls you give it) and `ReplayPolicy` (a
stored episode); `OpenAIPolicy` talks to any OpenAI-compatible endpoint (vLLM first),
`LocalPolicy` runs a transformers model on the CPU, `TinyPolicy` a tiny random model
for tests. `SimulatedUser` plays a task's customer with a policy of its own (seeded,
its transcript recorded); `user_from_name` makes the one ``gym run --user`` names.
A policy whose conversation outgrows its model's context raises `ContextFull`: the
episode (or, for a user, the conversation) ends there and is graded.
`policy_from_name` makes a policy from its command-line name (`POLICIES`)::

    >>> from gym.policies import policy_from_name
    >>> policy = policy_from_name("openai", model="Qwen/Qwen3-8B", base_url=url)  # doctest: +SKIP
"""

from gym._policy import (
    DEFAULT_MODEL,
    POLICIES,
    ContextFull,
    LocalPolicy,
    NamedUser,
    NoopPolicy,
    OpenAIPolicy,
    OraclePolicy,
    PerturbedOraclePolicy,
    Policy,
    ScriptPolicy,
    SimulatedUser,
    TinyPolicy,
    Turn,
    parse_tool_call,
    policy_from_name,
    user_from_name,
)
from gym._run._replay import ReplayPolicy

__all__ = [
    "DEFAULT_MODEL",
    "POLICIES",
    "ContextFull",
    "LocalPolicy",
    "NamedUser",
    "NoopPolicy",
    "OpenAIPolicy",
    "OraclePolicy",
    "PerturbedOraclePolicy",
    "Policy",
    "ReplayPolicy",
    "ScriptPolicy",
    "SimulatedUser",
    "TinyPolicy",
    "Turn",
    "parse_tool_call",
    "policy_from_name",
    "user_from_name",
]
