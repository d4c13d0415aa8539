"""Episodes as a trainer needs them, from memory or from the store, and GRPO samples of them."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from gym._core._errors import ConfigError
from gym.train._rewards import AdvantageKind, Advantages, advantages, training_reward, verified
from gym.train._samples import Sample, TurnTokens, episode_samples, turn_tokens

if TYPE_CHECKING:
    from gym._run._rollout import EpisodeResult
    from gym._store import Store

__all__ = ["GroupSamples", "TrainEpisode", "grpo_samples"]


class TrainEpisode(BaseModel):
    """One episode's outcome and tokens."""

    episode_id: str = ""
    """Its id (the store's, when it came from there)."""
    group: str
    """What its advantage is relative to: ``env_id/task_id`` (G samples of one task)."""
    split: str = ""
    """The task's split (train or eval)."""
    outcome: str
    """pass, fail or infra_error."""
    reward: float | None
    """The verdict's reward (None for infra_error)."""
    flags: list[str] = Field(default_factory=list)
    """Names of the verdict's gating flags (each failed the episode)."""
    notes: list[str] = Field(default_factory=list)
    """Names of its non-gating flags (notes: they cost no reward, but unverify it)."""
    turns: list[TurnTokens] = Field(default_factory=list)
    """Token records of its turns (empty for an infra_error episode without them)."""

    @property
    def reward_for_training(self) -> float | None:
        """See `training_reward`: None for infra_error, 0 with a gating flag."""
        return training_reward(self.outcome, self.reward, self.flags)

    @property
    def verified(self) -> bool:
        """Passed with no flag at all, notes included (see `verified`)."""
        return verified(self.outcome, [*self.flags, *self.notes])

    @classmethod
    def from_result(cls, result: EpisodeResult, episode_id: str = "") -> TrainEpisode:
        """From a `gym.EpisodeResult` in memory."""
        flags, notes = flag_names(result.verdict.flags if result.verdict else [])
        return cls(
            episode_id=episode_id,
            group=f"{result.env_id}/{result.task_id}",
            split=result.split,
            outcome=result.outcome,
            reward=result.reward,
            flags=flags,
            notes=notes,
            turns=_tokens_unless_infra(result.outcome, result.turns),
        )

    @classmethod
    def from_store(cls, store: Store, episode_id: str) -> TrainEpisode:
        """From a stored episode (its current verdict's flags and its steps' tokens)."""
        row = store.episode(episode_id)
        verdict = store.verdicts(row.run_id).get(row.id)
        flags, notes = flag_names(verdict.flags if verdict else [])
        return cls(
            episode_id=row.id,
            group=f"{row.env_id}/{row.task_id}",
            split=row.split,
            outcome=row.outcome,
            reward=row.reward,
            flags=flags,
            notes=notes,
            turns=_tokens_unless_infra(row.outcome, store.steps(row.id)),
        )


def flag_names(flags: Sequence[Any]) -> tuple[list[str], list[str]]:
    """(gating flag names, note names) of a verdict's flags (models or stored dicts).

    A stored flag without ``gating`` comes from before notes existed: it gated.
    """
    gating: list[str] = []
    notes: list[str] = []
    for flag in flags:
        data = flag if isinstance(flag, dict) else {"name": flag.name, "gating": flag.gating}
        (gating if data.get("gating", True) else notes).append(str(data.get("name", "")))
    return gating, notes


def _tokens_unless_infra(outcome: str, turns: Sequence[Any]) -> list[TurnTokens]:
    """Token records; an infra_error episode (never trained on) may lack them."""
    if outcome == "infra_error":
        return []
    return turn_tokens(turns)


class GroupSamples(BaseModel):
    """Samples of a batch of episodes with their advantages, and what was left out."""

    samples: list[Sample]
    """One or more per kept episode, each carrying its episode's advantage."""
    advantages: Advantages
    """Per-episode advantages, the kept mask and the dropped-group counts."""
    prefix_breaks: int = 0
    """Turns that began a new sample because the prefix property broke."""
    episodes_with_breaks: int = 0
    """Kept episodes that were split at least once."""


def grpo_samples(
    episodes: Sequence[TrainEpisode],
    kind: AdvantageKind = "grpo",
    *,
    eos_token_id: int | None = None,
    allow_eval: bool = False,
) -> GroupSamples:
    """Samples of the episodes whose group has reward variance, with their advantages.

    Args:
        episodes: G episodes per task (grouped by ``group``), any order.
        kind: grpo, dr_grpo or rloo.
        eos_token_id: marks samples whose last completion was cut (see `episode_samples`).
        allow_eval: also accept eval-split episodes (refused by default: training on
            the eval split makes its scores meaningless).

    Raises:
        ConfigError: an eval-split episode without ``allow_eval``.
    """
    leaked = [e.episode_id or e.group for e in episodes if e.split == "eval"]
    if leaked and not allow_eval:
        raise ConfigError(
            f"{len(leaked)} episodes are from the eval split (e.g. {leaked[0]}): train on "
            "the train split"
        )
    groups: list[Hashable] = [e.group for e in episodes]
    adv = advantages([e.reward_for_training for e in episodes], groups, kind)
    samples, breaks, split = [], 0, 0
    for episode, value, keep in zip(episodes, adv.values, adv.keep, strict=True):
        if not keep:
            continue
        built = episode_samples(episode.turns, eos_token_id=eos_token_id)
        breaks, split = breaks + built.prefix_breaks, split + (built.prefix_breaks > 0)
        for sample in built.samples:
            samples.append(
                sample.model_copy(update={"advantage": value, "episode_id": episode.episode_id})
            )
    return GroupSamples(
        samples=samples, advantages=adv, prefix_breaks=breaks, episodes_with_breaks=split
    )
