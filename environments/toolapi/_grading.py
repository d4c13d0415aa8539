"""The gold-replay backend-state grader: the agent's backend, turn by turn, against the gold's.

At each user turn's end, and when the episode ends, the harness takes a checkpoint of
the agent's backend (the service's plain-JSON projection of each instance's public
attributes, and the result text of each call of the turn). To grade, a fresh grading
container (never the agent's) loads the same backend from the same initial state and
replays the task's gold calls turn by turn, with a checkpoint after each. The host then
compares plain values, turn by turn, as BFCL's multi-turn checker does
(bfcl_eval/eval_checker/multi_turn_eval/multi_turn_checker.py):

- a turn with gold calls in which the agent made no call fails (BFCL's empty turn);
- every class's state after the turn equals the gold state (each public attribute,
  compared by `same_value`: typed, numbers by value);
- the gold results of the turn are all among the agent's results so far, counted with
  their repeats, in any order (BFCL's unordered containment, over all turns so far);
- a turn without gold calls is not checked (BFCL checks those with its irrelevance
  checker, which this grader does not run).

Each turn is one gated component of the verdict; its explanation says what differs.
Any family whose backend is a set of Python classes can reuse it (`turn_components`,
`replay_gold`).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

import gym
import gym.images
import gym.sandbox
from environments.toolapi._service import (
    Backend,
    Checkpoint,
    ServiceDown,
    exchange_many,
    replay_script,
)

__all__ = [
    "GRADER",
    "Gold",
    "ToolAPIState",
    "grader_version",
    "load_gold",
    "replay_gold",
    "same_value",
    "state_differences",
    "turn_components",
]

GRADER = "toolapi-gold-replay"
_SOURCES = [Path(__file__), Path(__file__).with_name("_service.py")]
_EXPLAIN = 2000
"""Characters of a difference shown in a component's explanation."""


class ToolAPIState(BaseModel):
    """The final state of a tool-API episode: the backend after each user turn."""

    turns: list[Checkpoint] = Field(default_factory=list)
    """One checkpoint per user turn the episode reached, in order (the last one taken
    when the episode ended)."""
    error: str = ""
    """Why a checkpoint could not be taken (the service stopped during the episode)."""


class Gold(BaseModel):
    """A task's hidden reference: the gold calls of each user turn."""

    turns: list[list[gym.ToolCall]]
    """Per user turn, the calls that reach the expected state and results."""


def grader_version(modules: dict[str, str], image: str = "toolapi") -> str:
    """A hash of the grader's code, its image and the backend modules.

    The image's context hash covers the service in it, whether the image copies the
    bundled one or builds on it.
    """
    h = hashlib.sha256()
    for path in _SOURCES:
        h.update(path.read_bytes())
    h.update(gym.images.context_hash(image).encode())
    for name, source in sorted(modules.items()):
        h.update(name.encode() + b"\0" + source.encode() + b"\0")
    return "1+" + h.hexdigest()[:12]


def load_gold(task: gym.Task, turns: int) -> Gold:
    """The task's hidden/gold.json, with one list of calls per user turn.

    Raises:
        gym.ConfigError: the file is missing or malformed, or its turns are not the task's.
    """
    path = task.folder() / "hidden" / "gold.json"
    try:
        gold = Gold.model_validate_json(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise gym.ConfigError(f"task {task.id}: cannot read {path}: {exc}") from exc
    if len(gold.turns) != turns:
        raise gym.ConfigError(
            f"task {task.id}: {path} has {len(gold.turns)} turns of gold calls; the task "
            f"has {turns} user turns (the prompt and each of `turns`): give one list each"
        )
    return gold


def replay_gold(
    sandbox: gym.sandbox.Sandbox, backend: Backend, gold: Gold, *, timeout: float
) -> list[Checkpoint]:
    """Replay the gold calls on a fresh backend in a (grading) sandbox; a checkpoint per turn.

    Raises:
        gym.GradingError: the service did not answer or could not load the backend.
    """
    requests = replay_script(backend, gold.turns)
    try:
        replies = exchange_many(sandbox, requests, timeout=timeout)
    except ServiceDown as exc:
        raise gym.GradingError(f"replaying the gold calls failed: {exc}") from exc
    bad = [r for r in replies if r.get("ok") is not True]
    if bad:
        raise gym.GradingError(f"the service refused a gold request: {bad[0].get('error')}")
    out = []
    for request, reply in zip(requests, replies, strict=True):
        if request["op"] == "checkpoint":
            out.append(Checkpoint.model_validate(reply, strict=False))
    return out


def _clip(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= _EXPLAIN else text[:_EXPLAIN] + "..."


def _number(value: Any) -> bool:
    return type(value) is int or type(value) is float


_UNORDERED = ("__set__", "__dict__")
"""The service's tags whose members have no order (a text key never spells one: the
service escapes a dict's keys that start with ``__``)."""


def _canonical(value: Any) -> Any:
    """A hashable form of a projected value, equal for two values `same_value` calls equal.

    Numbers by value (Python's equal int and float hash alike), a bool apart from them,
    and the members of `_UNORDERED` tags as a multiset, so that counting these forms
    matches members in any order.
    """
    if type(value) is bool:
        return ("bool", value)
    if _number(value):
        return ("number", value)
    if type(value) is list:
        return ("list", tuple(map(_canonical, value)))
    if type(value) is dict:
        tag = next(iter(value)) if len(value) == 1 else ""
        if tag in _UNORDERED and type(value[tag]) is list:
            members = Counter(map(_canonical, value[tag]))
            return ("unordered", tag, frozenset(members.items()))
        return ("dict", frozenset((k, _canonical(v)) for k, v in value.items()))
    if value is None or type(value) is str:
        return (type(value).__name__, value)
    return ("other", repr(value))


def same_value(a: Any, b: Any) -> bool:
    """Whether two projected values are equal: the same JSON types, numbers by value.

    A bool is never a number, a list never an object, and the service's tags (a set,
    a tuple, an object...) never a backend dict (`plain` escapes dict keys). An int and
    a float are equal when their values are (exactly, as Python compares them): JSON has
    one number type, so an agent's ``150`` for the gold's ``150.0`` (both valid for a
    ``number`` parameter, often stored as sent) is the same state, as in BFCL, which
    compares the live objects with ``==``. A set's members and a non-text-keyed dict's
    pairs (``__set__``, ``__dict__``) are compared as multisets, in any order: the
    service sorts them by their JSON text, which puts ``10**20`` and its equal ``1e20``
    in different places.
    """
    if _number(a) and _number(b):
        return bool(a == b)
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        if a.keys() != b.keys():
            return False
        tag = next(iter(a)) if len(a) == 1 else ""
        if tag in _UNORDERED and type(a[tag]) is list and type(b[tag]) is list:
            return Counter(map(_canonical, a[tag])) == Counter(map(_canonical, b[tag]))
        return all(same_value(v, b[k]) for k, v in a.items())
    if type(a) is list:
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def state_differences(agent: dict[str, Any], gold: dict[str, Any]) -> dict[str, Any]:
    """Class -> attribute -> {agent, gold} for every public attribute that differs.

    Compared by `same_value`: typed, never by Python's ``==`` alone (which calls
    ``True``, ``1`` and ``1.0`` equal).
    """
    out: dict[str, Any] = {}
    for name, want in gold.items():
        mine = agent.get(name)
        if type(mine) is not dict or type(want) is not dict:
            if not same_value(mine, want):
                out[name] = {"agent": mine, "gold": want}
            continue
        diff = {
            attr: {"agent": mine.get(attr), "gold": want.get(attr)}
            for attr in sorted(set(mine) | set(want))
            if attr not in mine or attr not in want or not same_value(mine[attr], want[attr])
        }
        if diff:
            out[name] = diff
    return out


def missing_results(agent: Sequence[str], gold: Sequence[str]) -> list[str]:
    """The gold results not among the agent's, each counted with its repeats."""
    left = Counter(agent)
    missing = []
    for item in gold:
        if left[item] > 0:
            left[item] -= 1
        else:
            missing.append(item)
    return missing


def _turn(
    index: int, agent: ToolAPIState, gold: list[Checkpoint], calls: int, so_far: list[str]
) -> gym.Component:
    def failed(why: str) -> gym.Component:
        return gym.Component(score=0.0, passed=False, explanation=f"turn {index + 1}: {why}")

    if index >= len(agent.turns):
        why = f" ({agent.error})" if agent.error else ""
        return failed(f"the episode ended before this user turn{why}")
    mine = agent.turns[index]
    if calls == 0 and index < len(gold) - 1:
        return gym.Component(
            score=1.0,
            passed=True,
            explanation=f"turn {index + 1}: no gold calls, not checked (as BFCL's state "
            "checker; the next turn's state holds what this one changed)",
        )
    if calls == 0:  # the last turn: nothing after it would see what it changed
        diff = state_differences(mine.state, gold[index].state)
        if diff:
            return failed(f"no gold calls, yet the backend's state changed: {_clip(diff)}")
        return gym.Component(
            score=1.0,
            passed=True,
            explanation=f"turn {index + 1}: no gold calls; the state equals the gold state",
        )
    if not mine.results:
        return failed("no tool call in a turn that needs some")
    diff = state_differences(mine.state, gold[index].state)
    if diff:
        return failed(f"the backend's state differs from the gold state: {_clip(diff)}")
    missing = missing_results(so_far, gold[index].results)
    if missing:
        return failed(f"gold results missing from the agent's results so far: {_clip(missing)}")
    return gym.Component(
        score=1.0,
        passed=True,
        explanation=(
            f"turn {index + 1}: state equals the gold state; all {len(gold[index].results)} "
            "gold results are among the agent's"
        ),
    )


def turn_components(
    agent: ToolAPIState, gold: list[Checkpoint], gold_calls: Gold
) -> dict[str, gym.Component]:
    """One gated component per user turn (``turn_1``, ``turn_2``...): state and results."""
    components: dict[str, gym.Component] = {}
    so_far: list[str] = []
    for i in range(len(gold)):
        if i < len(agent.turns):
            so_far = so_far + agent.turns[i].results
        components[f"turn_{i + 1}"] = _turn(i, agent, gold, len(gold_calls.turns[i]), so_far)
    return components
