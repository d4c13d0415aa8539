"""Episodes as a trainer needs them, from memory or from the store, and GRPO samples of them.

Held-out episodes never become training data: `refuse_held_out_episodes` asks the one
authority on split roles (`gym._envs._splits.split_use`) about each episode's own
environment and split, and everything here that builds samples calls it first.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from gym._core._errors import HeldOutError
from gym._envs._splits import split_use
from gym.train._rewards import AdvantageKind, Advantages, advantages, training_reward, verified
from gym.train._samples import Sample, TurnTokens, episode_samples, first_steps, turn_tokens

if TYPE_CHECKING:
    from gym._run._rollout import EpisodeResult
    from gym._store import Store

__all__ = ["GroupSamples", "TrainEpisode", "grpo_samples", "refuse_held_out_episodes"]


class TrainEpisode(BaseModel):
    """One episode's outcome and tokens."""

    episode_id: str = ""
    """Its id (the store's, when it came from there)."""
    group: str
    """What its advantage is relative to: ``env_id/task_id`` (G samples of one task)."""
    env_id: str = ""
    """Its environment, whose family declares the role of ``split`` (an episode without
    one is refused as training data: its split's role cannot be told)."""
    split: str = ""
    """The task's split (its role, training or held-out, is the family's: `split_use`)."""
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
            env_id=result.env_id,
            split=result.split,
            outcome=result.outcome,
            reward=result.reward,
            flags=flags,
            notes=notes,
            turns=_tokens_unless_infra(result.outcome, result.turns),
        )

    @classmethod
    def from_store(cls, store: Store, episode_id: str) -> TrainEpisode:
        """From a stored episode (its current verdict's flags and its turns' tokens)."""
        from gym._store import said_by_step

        row = store.episode(episode_id)
        verdict = store.verdicts(row.run_id).get(row.id)
        flags, notes = flag_names(verdict.flags if verdict else [])
        return cls(
            episode_id=row.id,
            group=f"{row.env_id}/{row.task_id}",
            env_id=row.env_id,
            split=row.split,
            outcome=row.outcome,
            reward=row.reward,
            flags=flags,
            notes=notes,
            turns=_tokens_unless_infra(
                row.outcome,
                first_steps(store.steps(row.id), said_by_step(row.messages, store.turns(row.id))),
            ),
        )


def refuse_held_out_episodes(episodes: Iterable[TrainEpisode]) -> None:
    """Raise unless every episode is of a training split of its own environment.

    Asks `split_use` (which fails closed: a split its family does not declare, an empty
    one, or any but ``train`` of an environment not registered here is held out). Every
    entry that starts, reads or samples training episodes calls this.

    Raises:
        HeldOutError: some are held out, or name no environment; the message says which.
    """
    held = [e for e in episodes if not e.env_id or split_use(e.env_id, e.split) != "training"]
    if held:
        shown = ", ".join(
            f"{e.episode_id or e.group} ({e.env_id or 'no env_id'}: split {e.split!r})"
            for e in held[:3]
        )
        raise HeldOutError(
            f"{len(held)} episode(s) are not of a training split: {shown}; held-out "
            "splits are for evaluation only (training on them makes their scores "
            "meaningless): train on the tasks of `gym.train.training_tasks`"
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
        allow_eval: also accept held-out episodes (refused by default: training on a
            held-out split makes its scores meaningless; see `refuse_held_out_episodes`).

    Raises:
        HeldOutError: a held-out episode (or one without ``env_id``) without
            ``allow_eval``.
    """
    if not allow_eval:
        refuse_held_out_episodes(episodes)
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
