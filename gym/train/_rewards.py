"""From verdicts to group-relative advantages (pure Python, no torch).

Rewards: an ``infra_error`` episode has no reward and is left out (never punished);
an episode with a gating flag gets reward 0 whatever its tests said, and only one with
no flag at all is verified. A note (a non-gating flag: text that looks like a hack,
which grading makes harmless) costs no reward.

Advantages, over the G episodes of one task (a group):

- ``grpo``: (r - mean) / (std + eps), std the sample standard deviation (n - 1), as
  TRL computes it;
- ``dr_grpo``: r - mean (Dr. GRPO: no division by the std);
- ``rloo``: r - mean of the other G - 1 rewards (leave-one-out baseline).

A group whose rewards are all equal (zero variance), or that keeps fewer than two
episodes once infra errors are left out, teaches nothing: it is dropped and counted.

Dense step rewards: `judge_step_reward` turns an LLM judge into a step reward
(``StepReward`` of `gym.train._steps`: task, conversation up to and including the step,
step index -> a reward in [0, 1] or None). A judge that fails (its retries spent, an
answer it cannot parse, a conversation with no step in it) gives None: no step reward
for that step, never a made-up number; each such step is counted and logged.
"""

from __future__ import annotations

import logging
import math
import threading
from collections import defaultdict
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from gym._core._errors import ConfigError, GradingError
from gym._core._models import Task

if TYPE_CHECKING:
    from gym._grading._judge import Judge

__all__ = [
    "AdvantageKind",
    "Advantages",
    "JudgeStepReward",
    "StepRewardCounts",
    "advantages",
    "group_advantages",
    "judge_step_reward",
    "training_reward",
    "verified",
]

AdvantageKind = Literal["grpo", "dr_grpo", "rloo"]
"""How rewards become advantages within a group."""

_log = logging.getLogger(__name__)


def _flagged(flags: Sequence[Any]) -> bool:
    return len(flags) > 0


def training_reward(outcome: str, reward: float | None, flags: Sequence[Any] = ()) -> float | None:
    """The reward an episode trains with: None for infra_error, 0 with a gating flag.

    Args:
        outcome: pass, fail or infra_error.
        reward: the verdict's reward.
        flags: the verdict's gating flags (any zeroes the reward; pass notes elsewhere).
    """
    if outcome == "infra_error" or reward is None:
        return None
    return 0.0 if _flagged(flags) else float(reward)


def verified(outcome: str, flags: Sequence[Any] = ()) -> bool:
    """Passed with no flag at all (what rejection sampling keeps)."""
    return outcome == "pass" and not _flagged(flags)


def _std(values: Sequence[float]) -> float:
    """The sample standard deviation (n - 1)."""
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def group_advantages(
    rewards: Sequence[float], kind: AdvantageKind, eps: float = 1e-6
) -> list[float]:
    """The advantages of one group's rewards.

    Args:
        rewards: the rewards of the group's episodes (at least two).
        kind: grpo, dr_grpo or rloo.
        eps: added to the std before dividing (grpo).
    """
    n = len(rewards)
    if n < 2:
        raise ConfigError(f"a group needs at least two rewards, got {n}")
    mean = sum(rewards) / n
    if kind == "dr_grpo":
        return [r - mean for r in rewards]
    if kind == "rloo":
        total = sum(rewards)
        return [r - (total - r) / (n - 1) for r in rewards]
    if kind == "grpo":
        std = _std(rewards)
        return [(r - mean) / (std + eps) for r in rewards]
    raise ConfigError(f"unknown advantage {kind!r}: grpo, dr_grpo or rloo")


class Advantages(BaseModel):
    """Per-episode advantages and what was left out."""

    values: list[float]
    """One per episode, in the order given (0.0 where not kept)."""
    keep: list[bool]
    """Whether the episode trains: it has a reward and its group has variance."""
    groups: int
    """Groups seen."""
    zero_variance_groups: int
    """Groups dropped because every kept reward was equal (or fewer than two were kept)."""
    infra_excluded: int
    """Episodes left out for having no reward (infra_error)."""
    group_std: dict[str, float] = Field(default_factory=dict)
    """Each kept group's reward std (n - 1), keyed by ``str(group)``."""

    @property
    def zero_variance_fraction(self) -> float:
        """Dropped groups over all groups (0 when there are none)."""
        return self.zero_variance_groups / self.groups if self.groups else 0.0


def advantages(
    rewards: Sequence[float | None],
    groups: Sequence[Hashable],
    kind: AdvantageKind = "grpo",
    *,
    eps: float = 1e-6,
) -> Advantages:
    """Group-relative advantages of a batch of episodes.

    Args:
        rewards: each episode's training reward (`training_reward`; None = infra error).
        groups: each episode's group (the task it ran, e.g. ``(env_id, task_id)``).
        kind: grpo, dr_grpo or rloo.
        eps: added to the std before dividing (grpo).
    """
    if len(rewards) != len(groups):
        raise ConfigError(f"{len(rewards)} rewards for {len(groups)} group keys")
    members: dict[Hashable, list[tuple[int, float]]] = defaultdict(list)
    for i, (reward, group) in enumerate(zip(rewards, groups, strict=True)):
        members.setdefault(group, [])
        if reward is not None:
            members[group].append((i, float(reward)))
    values, keep = [0.0] * len(rewards), [False] * len(rewards)
    dropped, stds = 0, {}
    for group, scored in members.items():
        scores = [r for _, r in scored]
        if len(scores) < 2 or max(scores) == min(scores):
            dropped += 1
            continue
        for (i, _), value in zip(scored, group_advantages(scores, kind, eps), strict=True):
            values[i], keep[i] = value, True
        stds[str(group)] = _std(scores)
    return Advantages(
        values=values,
        keep=keep,
        groups=len(members),
        zero_variance_groups=dropped,
        infra_excluded=sum(r is None for r in rewards),
        group_std=stds,
    )


class StepRewardCounts(BaseModel):
    """What a `JudgeStepReward` has done so far."""

    scored: int = 0
    """Steps that got a reward (from the model or the cache)."""
    cached: int = 0
    """Of those, the ones answered from the judge's cache."""
    failed: int = 0
    """Steps that got None because the judge failed (no step reward, never a made-up one)."""
    last_error: str = ""
    """The last failure's message ('' when none)."""


class JudgeStepReward:
    """A step reward from an LLM judge: a ``StepReward`` (task, conversation, step index).

    Each call asks `Judge.assess_step` for the step's score in [0, 1]: the step prompt and
    rubric are the judge's own (`Judge.step_version`), the call is cached, ``temperature``
    is 0. A `GradingError` (the judge unreachable once its retries are spent, or an
    answer it cannot parse) or a conversation holding no step gives None, counted in
    `counts`; the trainer then has no step reward for that step. Safe to call from
    several threads.
    """

    def __init__(self, judge: Judge) -> None:
        self.judge = judge
        self._counts = StepRewardCounts()
        self._lock = threading.Lock()
        # A stable name: the step-sampling config names its step reward by
        # ``__module__.__qualname__`` in the training id, so the judge's model and step
        # version are part of it (an instance has no __qualname__ of its own).
        self.__qualname__ = f"JudgeStepReward[{judge.model}@{judge.step_version}]"

    def __repr__(self) -> str:
        return (
            f"JudgeStepReward(model={self.judge.model!r}, step_version={self.judge.step_version!r})"
        )

    @property
    def counts(self) -> StepRewardCounts:
        """A copy of the counts so far."""
        with self._lock:
            return self._counts.model_copy()

    def __call__(self, task: Task, conversation: list[dict[str, Any]], step: int) -> float | None:
        """The step's reward in [0, 1], or None when the judge gave none."""
        try:
            result = self.judge.assess_step(task.prompt, conversation, step)
        except (GradingError, ValueError) as exc:
            with self._lock:
                self._counts.failed += 1
                self._counts.last_error = str(exc)
            _log.warning("no step reward for %s step %d: %s", task.id, step, exc)
            return None
        with self._lock:
            self._counts.scored += 1
            self._counts.cached += result.cached
        return result.score


def judge_step_reward(judge: Judge) -> JudgeStepReward:
    """A ``StepReward`` (`gym.train._steps`) that asks ``judge`` to score each step.

    Example::

        judge = Judge.from_env()  # GYM_JUDGE_BASE_URL, GYM_JUDGE_MODEL
        reward = judge_step_reward(judge)
        reward(task, conversation, 2)  # 0.75, or None if the judge failed
        reward.counts.failed           # steps left without a step reward
    """
    return JudgeStepReward(judge)
