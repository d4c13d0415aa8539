"""Tree credit: each turn's advantage from the values of the states around it.

A step-level collection is a forest: per task, its parents, each with branches that
share the parent's turns up to their fork and play on from there (no branch forks
again). Every episode of it is a rollout of the policy, so the mean signal of the
episodes that pass through a state estimates that state's value V:

- before the parent's turn t (the state the branches forked at t start from): the
  parent and its branches forked at t or later; before turn 0, the task's reset state
  (the root): every episode of the task;
- after the parent's turn t: the parent and its branches forked after t;
- after any turn of a branch from its branching turn on: that branch alone.

A turn's credit is the sum of two terms, as in TreeRL (Hou et al., 2025, "TreeRL: LLM
Reinforcement Learning with On-Policy Tree Search"):

- **step**: V after it minus V before it, the turn's own effect against the rollouts
  that shared its state (a branch's branching turn: against its fork, the parent among
  them; its later turns: 0, only its own outcome lies below them);
- **outcome**: V after it minus the root's V: trajectory GRPO's advantage, with the
  mean of the rollouts through the turn in place of the episode's own signal.

The parents' turns and the branches' own turns (from the branching turn on) train; a
branch's shared prefix is its parent's turns and trains there. A parent with no branch
gets twice trajectory GRPO's advantage on its first turn and once on the others.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel

if TYPE_CHECKING:
    from gym.train._grpo_collect import ScoredEpisode

__all__ = ["TreeCredit", "TurnCredit", "tree_credit"]


class _Lineage(Protocol):
    parent_id: str
    turn: int


class TurnCredit(BaseModel):
    """One turn's credit in its tree (no division by a spread)."""

    episode_id: str
    """The episode whose turn it is."""
    turn: int
    """The turn's index among the episode's turns."""
    step: float
    """V after the turn minus V before it."""
    outcome: float
    """V after the turn minus the root's V."""
    task: str
    """Its task's group (``env_id/task_id``): the scale of a grpo advantage."""

    @property
    def raw(self) -> float:
        """The turn's advantage estimate: step + outcome."""
        return self.step + self.outcome


class TreeCredit(BaseModel):
    """The credits of a collection's turns and the signals per task."""

    credits: list[TurnCredit]
    """Every turn with a credit, in tasks whose signals differ (zeros included)."""
    tasks: dict[str, list[float]]
    """Task group -> the signals of its episodes (infra_error left out)."""
    infra_excluded: int
    """Episodes with no signal."""

    def spread(self, task: str) -> float:
        """The task's signal std (n - 1; 0 with fewer than two)."""
        values = self.tasks.get(task, [])
        return statistics.stdev(values) if len(values) >= 2 else 0.0


def tree_credit(
    episodes: Sequence[ScoredEpisode],
    lineage: Mapping[str, _Lineage],
    signals: Mapping[str, float | None],
) -> TreeCredit:
    """The credit of every turn of a step-level collection.

    Args:
        episodes: the parents and branches (a parent absent leaves its branches their
            fork's other rollouts as the state's value).
        lineage: branch episode id -> its parent's id and its branching turn.
        signals: episode id -> its signal (None: infra_error, left out).
    """
    task_of = {e.episode.episode_id: e.episode.group for e in episodes}
    tasks: dict[str, list[float]] = {}
    for episode_id, group in task_of.items():
        if (value := signals.get(episode_id)) is not None:
            tasks.setdefault(group, []).append(value)
    trees: dict[str, list[tuple[int, str]]] = {}
    for episode_id in task_of:
        if (line := lineage.get(episode_id)) is not None:
            trees.setdefault(line.parent_id, []).append((line.turn, episode_id))
    turns_of = {e.episode.episode_id: len(e.episode.turns) for e in episodes}
    lone = [i for i in task_of if i not in lineage and i not in trees]  # parents, no branch
    credits: list[TurnCredit] = []
    for parent_id in [*trees, *lone]:
        credits += _tree(parent_id, trees.get(parent_id, []), turns_of, task_of, signals, tasks)
    varied = {t for t, values in tasks.items() if len(values) >= 2 and min(values) != max(values)}
    return TreeCredit(
        credits=[c for c in credits if c.task in varied],
        tasks=tasks,
        infra_excluded=sum(signals.get(i) is None for i in task_of),
    )


def _tree(
    parent_id: str,
    forks: list[tuple[int, str]],
    turns_of: Mapping[str, int],
    task_of: Mapping[str, str],
    signals: Mapping[str, float | None],
    tasks: Mapping[str, list[float]],
) -> list[TurnCredit]:
    """The credits of one parent's turns and of its branches' own turns."""
    task = task_of.get(parent_id) or task_of[forks[0][1]]
    root = statistics.fmean(tasks[task]) if tasks.get(task) else math.nan

    def through(first: int) -> list[float]:
        """The signals of the rollouts through the parent's state before turn ``first``."""
        members = [b for t, b in forks if t >= first] + [parent_id]
        return [v for m in members if (v := signals.get(m)) is not None]

    def before(turn: int) -> float:
        return root if turn == 0 else statistics.fmean(through(turn))

    def credit(episode_id: str, turn: int, after: float, prior: float) -> TurnCredit:
        return TurnCredit(
            episode_id=episode_id, turn=turn, step=after - prior, outcome=after - root, task=task
        )

    out: list[TurnCredit] = []
    if signals.get(parent_id) is not None:
        for turn in range(turns_of[parent_id]):
            out.append(credit(parent_id, turn, statistics.fmean(through(turn + 1)), before(turn)))
    for fork, branch in forks:
        signal = signals.get(branch)
        if signal is None or math.isnan(root):
            continue
        out.append(credit(branch, fork, signal, before(fork)))  # it must exist: checked there
        out += [credit(branch, t, signal, signal) for t in range(fork + 1, turns_of[branch])]
    return out
