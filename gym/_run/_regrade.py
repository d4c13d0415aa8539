"""Re-scoring stored final states with the current graders, without re-running agents."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gym._core._tools import ToolCall
from gym._envs._env import ContainerEnv, StepRecord, env_of
from gym._envs._registry import make
from gym._store import EpisodeRow, StepRow, Store, TurnsRow, VerdictRow, said_by_step

__all__ = ["regrade_run", "trajectory_of"]


REPLACED = "skipped: another attempt replaced the episode (or it was deleted) while regrading"
"""The note of an episode whose new verdict was refused (`Store.add_verdict`)."""


def trajectory_of(
    steps: Sequence[StepRow], messages: Sequence[dict[str, Any]], turns: TurnsRow | None = None
) -> list[StepRecord]:
    """A stored episode's trajectory as the environment recorded it, assistant text included.

    The store keeps the assistant's text in the conversation: each step gets the text of
    the assistant message that made it (the ``i``-th message for step ``i`` when each made
    one step; the last step always the last one's, as grading saw it), and its user turn
    and turn end from ``turns`` (`Store.turns`; None: one turn).
    """
    kept = turns if turns is not None else TurnsRow.empty("")
    said = [m.get("content") for m in messages if m.get("role") == "assistant"]
    made = said_by_step(messages, kept)
    at = [made[i] if i < len(made) else i for i in range(len(steps))]
    texts: list[Any] = [said[n] if n < len(said) else None for n in at]
    if said and texts:
        texts[-1] = said[-1]
    ends = {end.step: end for end in kept.turn_ends()}
    return [
        StepRecord(
            call=ToolCall(name=s.tool, arguments=s.arguments) if s.tool else None,
            content=None if text is None else str(text),
            observation=s.observation,
            error=s.error,
            exit_code=s.exit_code,
            timed_out=s.timed_out,
            duration_s=s.env_duration_s,
            turn=kept.turn_of(i),
            turn_end=i in ends,
            user=ends[i].user if i in ends else None,
        )
        for i, (s, text) in enumerate(zip(steps, texts, strict=True))
    ]


def regrade_run(
    store: Store, run_id: str, *, progress: Callable[[int, int], None] | None = None
) -> list[dict[str, Any]]:
    """Grade every stored final state of a run again; record and return what changed.

    Each change says the episode, its outcome ``before`` and ``after``, whether its verdict
    ``changed`` and a ``note`` (`REPLACED` when the episode changed under the regrade: its
    stored attempt keeps its own verdict).

    Args:
        store: the run store.
        run_id: the run (or a unique prefix).
        progress: called with (episodes regraded, episodes to regrade): once before the
            first, then after each.
    """
    run = store.run(run_id)
    before = store.verdicts(run.id)
    steps = store.run_steps(run.id)
    turns = store.run_turns(run.id)
    changes: list[dict[str, Any]] = []
    envs: dict[str, ContainerEnv[Any]] = {}
    todo = [(e, e.export) for e in store.episodes(run.id) if e.export is not None]
    say = progress or _quiet
    say(0, len(todo))
    for e, export in todo:
        env = envs.get(e.env_id) or envs.setdefault(e.env_id, env_of(make(e.env_id)))
        trajectory = trajectory_of(steps.get(e.id, []), e.messages, turns.get(e.id))
        verdict = env.regrade(e.task_id, export, trajectory)
        old = before.get(e.id)
        old_key = (old.outcome, old.reward, [f["name"] for f in old.flags]) if old else None
        new_key = (verdict.outcome, verdict.reward, [f.name for f in verdict.flags])
        changed, note = old_key != new_key, ""
        if changed and not store.add_verdict(
            VerdictRow.of(e.id, verdict), outcome=verdict.outcome, reward=verdict.reward, graded=e
        ):
            changed, note = False, REPLACED
        before_outcome = old_key[0] if old_key else None
        changes.append(_change(e, before_outcome, verdict.outcome, changed, note))
        say(len(changes), len(todo))
    for env in envs.values():
        env.close()
    return changes


def _quiet(done: int, total: int) -> None:
    """A progress callback that says nothing."""


def _change(
    e: EpisodeRow, before: str | None, after: str, changed: bool, note: str
) -> dict[str, Any]:
    return {
        "episode_id": e.id,
        "env_id": e.env_id,
        "task_id": e.task_id,
        "sample_index": e.sample_index,
        "before": before,
        "after": after,
        "changed": changed,
        "note": note,
    }
