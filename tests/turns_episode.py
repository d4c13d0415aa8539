"""A stored episode of two user turns with tool schemas, for the store, export and viewer tests.

Written as `gym run` writes one (the runner's own `_rows` from an `EpisodeResult` shaped as
the rollout makes it): turn 0 opens with a message holding two parallel calls, then
``submit`` ends the turn; the user's second message (hostile HTML) opens turn 1, whose
``submit`` message also holds a call that was not run.
"""

from __future__ import annotations

import time
from typing import Any

from gym._core._models import Task, Verdict
from gym._core._tools import ToolCall
from gym._envs._env import StepRecord
from gym._policy import Turn
from gym._run._rollout import EpisodeResult
from gym._store import EpisodeRow, RunRow, StepRow, Store, TurnsRow, VerdictRow

ENV = "boxgym/Toy-v0"
USER = "<script>alert('turn')</script><b>now cancel it</b> \x1b[31mred\x1b[0m"
"""The user's second message: hostile text the viewer must show as text."""
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "find_flights",
            "description": "Flights between two cities <i>today</i>.",
            "parameters": {
                "type": "object",
                "properties": {"origin": {"type": "string"}, "to": {"type": "string"}},
                "required": ["origin", "to"],
            },
        },
        "x-boxgym-kind": "read",
    },
    {
        "type": "function",
        "function": {
            "name": "cancel",
            "description": "Cancel a booking.",
            "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "submit",
            "description": "End your turn.",
            "parameters": {"type": "object", "properties": {}},
        },
    },
]


def _call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": str(args)}}


MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You book flights."},
    {"role": "user", "content": "Find flights from Oslo to Rome and to Paris."},
    {
        "role": "assistant",
        "content": "Searching both.",
        "tool_calls": [
            _call("c0", "find_flights", {"origin": "OSL", "to": "FCO"}),
            _call("c1", "find_flights", {"origin": "OSL", "to": "CDG"}),
        ],
    },
    {"role": "tool", "tool_call_id": "c0", "content": "AZ 401"},
    {"role": "tool", "tool_call_id": "c1", "content": "AF 1275"},
    {"role": "assistant", "content": "Two found.", "tool_calls": [_call("c2", "submit", {})]},
    {"role": "tool", "tool_call_id": "c2", "content": "turn submitted"},
    {"role": "user", "content": USER},
    {"role": "assistant", "content": "Cancelling.", "tool_calls": [_call("c3", "cancel", {})]},
    {"role": "tool", "tool_call_id": "c3", "content": "cancelled 7"},
    {
        "role": "assistant",
        "content": "Done.",
        "tool_calls": [_call("c4", "submit", {}), _call("c5", "cancel", {"id": 8})],
    },
    {"role": "tool", "tool_call_id": "c4", "content": "submitted"},
    {"role": "tool", "tool_call_id": "c5", "content": "Not run: the episode ended"},
]
MESSAGE_TURNS = [0] * 7 + [1] * 6
"""The user turn of each message."""
STEP_ASSISTANT = [0, 0, 1, 2, 3]
"""Which assistant message made each step."""


def _step(name: str, args: dict[str, Any], obs: str, turn: int, **marks: Any) -> StepRecord:
    return StepRecord(call=ToolCall(name=name, arguments=args), observation=obs, turn=turn, **marks)


def result() -> EpisodeResult:
    """The episode as the rollout returns it."""
    steps = [
        _step("find_flights", {"origin": "OSL", "to": "FCO"}, "AZ 401", 0),
        _step("find_flights", {"origin": "OSL", "to": "CDG"}, "AF 1275", 0),
        _step("submit", {}, "turn submitted", 0, turn_end=True, user=USER),
        _step("cancel", {}, "cancelled 7", 1),
        _step("submit", {}, "submitted", 1, turn_end=True),
    ]
    turns = [
        Turn(message=m, completion_token_ids=[10 + n, 11], prompt_token_ids=[1, 2, 3])
        for n, m in enumerate(m for m in MESSAGES if m["role"] == "assistant")
    ]
    verdict = Verdict(outcome="pass", reward=1.0, reason="state matches after each turn")
    return EpisodeResult(
        env_id=ENV,
        task_id="book/1",
        split="train",
        seed=0,
        outcome="pass",
        reward=1.0,
        verdict=verdict,
        end_reason="submit",
        messages=MESSAGES,
        turns=turns,
        steps=steps,
        step_turns=STEP_ASSISTANT,
        tools=TOOLS,
        user_transcript=[
            {"turn": 0, "content": MESSAGES[1]["content"]},
            {"turn": 1, "content": USER},
        ],
    )


def rows() -> tuple[EpisodeRow, list[StepRow], VerdictRow | None, TurnsRow]:
    """The rows `gym run` stores for it."""
    from gym._run._executor import Job
    from gym._run._runner import RunConfig, _rows

    config = RunConfig(envs=[ENV], policy="openai")
    task = Task(id="book/1", family="toy", prompt=str(MESSAGES[1]["content"]), split="train")
    job = Job(env_id=ENV, task=task, sample_index=0, seed=0, episode_id="e0turns")
    return _rows(config, job, result(), 1, "0.test")


def store_it(store: Store) -> str:
    """Store the run and its one episode; the episode's id."""
    episode, steps, verdict, turns = rows()
    now = time.time()
    run = RunRow(
        id=episode.run_id,
        created_at=now,
        updated_at=now,
        config={},
        policy="openai",
        boxgym_version="0",
    )
    store.start_run(run, planned=1)
    store.commit_episode(episode, steps, verdict, turns)
    store.end_run(run.id, "finished")
    return episode.id
