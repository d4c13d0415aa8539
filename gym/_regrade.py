"""Re-scoring stored final states with the current graders, without re-running agents."""

from __future__ import annotations

from typing import Any

from gym._registry import make
from gym._rollout import with_claims
from gym._store import Store, VerdictRow, calls_of

__all__ = ["regrade_run"]


def regrade_run(store: Store, run_id: str) -> list[dict[str, Any]]:
    """Grade every stored final state of a run again; record and return what changed."""
    run = store.run(run_id)
    before = store.verdicts(run.id)
    steps = store.run_steps(run.id)
    changes: list[dict[str, Any]] = []
    envs: dict[str, Any] = {}
    for e in store.episodes(run.id):
        if e.export is None:
            continue
        env = envs.get(e.env_id) or envs.setdefault(e.env_id, make(e.env_id).unwrapped)
        regrade = getattr(env, "regrade", None)
        if regrade is None:
            continue
        calls = calls_of(steps.get(e.id, []))
        verdict = with_claims(regrade(e.task_id, e.export, calls), e.messages)
        old = before.get(e.id)
        old_key = (old.outcome, old.reward, [f["name"] for f in old.flags]) if old else None
        new_key = (verdict.outcome, verdict.reward, [f.name for f in verdict.flags])
        changed = old_key != new_key
        if changed:
            store.add_verdict(
                VerdictRow.of(e.id, verdict),
                outcome=verdict.outcome,
                reward=verdict.reward,
            )
        changes.append(
            {
                "episode_id": e.id,
                "env_id": e.env_id,
                "task_id": e.task_id,
                "sample_index": e.sample_index,
                "before": old_key[0] if old_key else None,
                "after": verdict.outcome,
                "changed": changed,
            }
        )
    for env in envs.values():
        env.close()
    return changes
