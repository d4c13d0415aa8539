"""Rows for the run store tests (tests/_store): a run, an episode, its steps and verdict.

The defaults make a full episode (a conversation, steps with token ids, a verdict flagged
``loop``); `rows` makes the bare one the lease and outage tests commit. The
``url`` and ``store`` fixtures, on SQLite and PostgreSQL, are in tests/_store/conftest.py.
"""

from __future__ import annotations

import time
from typing import Any

from gym._store import EpisodeRow, RunRow, StepRow, VerdictRow

HELLO: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
"""The messages of an episode by default."""
LOOP: list[dict[str, Any]] = [{"name": "loop", "detail": "", "gating": False}]
"""The flags of a verdict by default: one non-gating ``loop``."""


def run_row(
    run_id: str = "run1", *, config: dict[str, Any] | None = None, policy: str = "oracle"
) -> RunRow:
    """A run created now; its config ``{"envs": ["e"]}`` unless given."""
    now = time.time()
    return RunRow(
        id=run_id,
        created_at=now,
        updated_at=now,
        config={"envs": ["e"]} if config is None else config,
        policy=policy,
        boxgym_version="0",
    )


def episode(eid: str, outcome: str = "pass", run_id: str = "run1", **fields: Any) -> EpisodeRow:
    """An episode of ``boxgym/X-v0``: reward 1.0 if it passed, else none, and the messages
    `HELLO`; ``fields`` set or replace any of its fields (``messages=[]`` for none)."""
    row: dict[str, Any] = {
        "env_id": "boxgym/X-v0",
        "env_version": 0,
        "task_id": "t",
        "split": "train",
        "sample_index": 0,
        "seed": 1,
        "policy": "oracle",
        "reward": 1.0 if outcome == "pass" else None,
        "messages": [dict(m) for m in HELLO],  # a copy: no row shares it
    }
    return EpisodeRow(id=eid, run_id=run_id, outcome=outcome, **{**row, **fields})


def steps(eid: str, n: int = 2, *, detail: bool = True) -> list[StepRow]:
    """``n`` steps calling ``bash``; with ``detail``, each with its arguments, observation,
    completion token ids and logprobs (without, only the tool)."""
    if not detail:
        return [StepRow(episode_id=eid, index=i, tool="bash") for i in range(n)]
    return [
        StepRow(
            episode_id=eid,
            index=i,
            tool="bash",
            arguments={"command": "ls"},
            observation="out",
            completion_token_ids=[1, 2],
            logprobs=[-0.1, -0.2],
        )
        for i in range(n)
    ]


def verdict(
    eid: str,
    outcome: str = "pass",
    *,
    reward: float | None = 1.0,
    flags: list[dict[str, Any]] | None = None,
) -> VerdictRow:
    """A verdict graded now, flagged `LOOP` unless ``flags`` are given."""
    return VerdictRow(
        episode_id=eid,
        created_at=time.time(),
        outcome=outcome,
        reward=reward,
        flags=[dict(f) for f in LOOP] if flags is None else flags,
    )


def rows(
    eid: str,
    outcome: str = "pass",
    n_steps: int = 3,
    *,
    run_id: str = "run1",
    verdict_reward: float | None = None,
    **fields: Any,
) -> tuple[EpisodeRow, list[StepRow], VerdictRow]:
    """What `Store.commit_episode` takes for a bare episode: no messages (``fields`` as for
    `episode`), ``n_steps`` steps with only their tool, a verdict with no flags."""
    row = episode(eid, outcome, run_id, **{"messages": [], **fields})
    bare = verdict(eid, outcome, reward=verdict_reward, flags=[])
    return row, steps(eid, n_steps, detail=False), bare
