"""Collecting training episodes through the runner and the store, and scoring them.

One collection is one run of the store (``gym report RUN`` reads it like any run): G
episodes per task from one policy version, the version written into every episode's
``policy_params`` (``policy_version``). The run id is a hash of its configuration, so
collecting again after a crash finishes the run instead of starting it over.

Scoring reads each episode's current verdict:

- the training reward comes from the visible checks (``reward="visible"``, the
  default): the mean score of the verdict's components named ``visible*``, or the
  verdict's reward when it has none; ``reward="verdict"`` trains on the verdict's
  reward. A flagged episode gets 0 and an infra_error episode no reward (left out).
- the hidden pass (the held-out monitor): the components named ``hidden*`` all passed,
  or the verdict passed when it has none; never part of the reward by default.

The staleness bound (`split_stale`): an update at version v trains only on episodes
of versions v - max_staleness and later; older ones are left out and counted.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from gym._core._errors import ConfigError
from gym._envs._registry import make, tasks_of
from gym._envs._splits import refuse_held_out, training_tasks
from gym._policy import Policy
from gym._run._runner import RunConfig, run
from gym._store import EpisodeRow, StepRow, Store, TurnsRow, VerdictRow, said_by_step
from gym.train._episodes import TrainEpisode, flag_names, refuse_held_out_episodes
from gym.train._rewards import training_reward
from gym.train._samples import first_steps, turn_tokens

__all__ = [
    "Collected",
    "RewardSource",
    "ScoredEpisode",
    "collect",
    "env_tools",
    "hidden_passed",
    "is_stale",
    "read_collected",
    "split_stale",
    "train_tasks",
    "verdict_reward",
    "visible_reward",
]

RewardSource = Literal["visible", "verdict"]
"""Where the training reward comes from: the visible checks, or the whole verdict."""


def visible_reward(
    outcome: str, reward: float | None, components: Mapping[str, Mapping[str, Any]]
) -> float | None:
    """The reward of the visible checks: the mean score of components named ``visible*``.

    Args:
        outcome: pass, fail or infra_error.
        reward: the verdict's reward (used when there is no visible component).
        components: the verdict's components (name -> its fields, as stored).
    """
    if outcome == "infra_error" or reward is None:
        return None
    scores = [float(c.get("score", 0.0)) for n, c in components.items() if n.startswith("visible")]
    return sum(scores) / len(scores) if scores else float(reward)


def hidden_passed(outcome: str, components: Mapping[str, Mapping[str, Any]]) -> bool | None:
    """Whether the hidden checks passed (the components named ``hidden*``, else the verdict).

    None for an infra_error episode, which has no verdict worth reading.
    """
    if outcome == "infra_error":
        return None
    hidden = [bool(c.get("passed")) for n, c in components.items() if n.startswith("hidden")]
    return all(hidden) if hidden else outcome == "pass"


class ScoredEpisode(BaseModel):
    """A collected episode as a trainer sees it."""

    episode: TrainEpisode
    """Outcome, tokens, and ``reward`` from the chosen reward source."""
    env_id: str
    """Its environment (whose tools constrained its decoding)."""
    task_id: str
    """Its task."""
    policy_version: int
    """The version of the policy that produced it."""
    hidden_pass: bool | None
    """Whether its hidden checks passed (None for infra_error)."""
    tokens: int = 0
    """Tokens the policy sampled in it."""

    @model_validator(mode="after")
    def _episode_env(self) -> ScoredEpisode:
        """The episode carries this environment (filled in when it names none)."""
        if not self.episode.env_id:
            self.episode = self.episode.model_copy(update={"env_id": self.env_id})
        elif self.episode.env_id != self.env_id:
            raise ValueError(
                f"episode {self.episode.episode_id} is of {self.episode.env_id}, not {self.env_id}"
            )
        return self

    @property
    def training_reward(self) -> float | None:
        """Its reward for training: None for infra_error, 0 when flagged."""
        return self.episode.reward_for_training


class Collected(BaseModel):
    """The episodes of one collection (one run of the store)."""

    run_id: str
    """The run that holds them."""
    episodes: list[ScoredEpisode] = Field(default_factory=list)
    """Every episode of the run."""
    seconds: float = 0.0
    """Wall-clock seconds the collection took."""

    @property
    def graded(self) -> list[ScoredEpisode]:
        """The episodes that have a reward (not infra_error)."""
        return [e for e in self.episodes if e.training_reward is not None]

    @property
    def monitored(self) -> list[ScoredEpisode]:
        """The graded episodes the step's monitor (and the watch) reads: all of them."""
        return self.graded

    @property
    def tokens(self) -> int:
        """Tokens sampled over all episodes."""
        return sum(e.tokens for e in self.episodes)


def split_stale(
    episodes: Sequence[ScoredEpisode], version: int, max_staleness: int
) -> tuple[list[ScoredEpisode], list[ScoredEpisode]]:
    """The episodes an update of ``version`` may train on, and those too old for it.

    An episode is stale when the policy version that produced it is older than
    ``version - max_staleness`` (0: only on-policy episodes); one that recorded no
    version (-1) is stale too.
    """
    kept = [e for e in episodes if not is_stale(e.policy_version, version, max_staleness)]
    stale = [e for e in episodes if is_stale(e.policy_version, version, max_staleness)]
    return kept, stale


def is_stale(produced_by: int, version: int, max_staleness: int) -> bool:
    """Whether an episode of version ``produced_by`` is too old for an update of ``version``."""
    return produced_by < max(version - max_staleness, 0)


def train_tasks(envs: Sequence[str], tasks: Sequence[str] | None) -> dict[str, list[str]]:
    """The training-split tasks of each environment (those named in ``tasks`` when given).

    Raises:
        HeldOutError: a named task is in a held-out split (training on it makes its
            scores meaningless).
        ConfigError: a named task does not exist, or no training task is left.
    """
    out: dict[str, list[str]] = {}
    wanted = set(tasks or ())
    for env_id in envs:
        refuse_held_out(env_id, [t for t in tasks_of(env_id) if t.id in wanted])
        out[env_id] = sorted(t.id for t in training_tasks(env_id) if not wanted or t.id in wanted)
    missing = wanted - {t for ids in out.values() for t in ids}
    if missing:
        raise ConfigError(f"no such task in {', '.join(envs)}: {sorted(missing)}")
    if not any(out.values()):
        raise ConfigError(f"{', '.join(envs)} has no training-split task to train on")
    return out


def env_tools(env_id: str) -> list[dict[str, Any]]:
    """The tools an environment offers (OpenAI schemas), as its episodes saw them."""
    env = make(env_id)
    try:
        inner = env.unwrapped
        return [spec.openai_schema() for spec, _ in inner.tools.values()]  # type: ignore[attr-defined]
    finally:
        env.close()


def _step_seed(seed: int, step: int) -> int:
    digest = hashlib.sha256(f"train:{seed}:{step}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def collect(
    store: Store,
    *,
    envs: Sequence[str],
    tasks: Sequence[str],
    group_size: int,
    seed: int,
    version: int,
    policy: str,
    policy_params: Mapping[str, Any],
    policy_factory: Callable[[], Policy],
    reward: RewardSource = "visible",
    concurrency: int = 4,
    label: str = "",
) -> Collected:
    """Run ``group_size`` episodes of every task with one policy version; score them.

    Args:
        store: where the episodes are committed (a run of their own).
        envs: environment ids.
        tasks: the task ids to run (training splits only: see `train_tasks`; an id
            that is held out in any of ``envs`` is refused before anything runs).
        group_size: episodes per task (G).
        seed: the training seed; each version's episodes get reset seeds of their own.
        version: the policy version (recorded in every episode's ``policy_params``).
        policy: the policy's name.
        policy_params: its settings (part of the run's identity).
        policy_factory: builds a policy over the current weights (once per worker).
        reward: the reward source (see the module docstring).
        concurrency: episodes at once.
        label: the run's label.

    Raises:
        HeldOutError: a task is of a held-out split of one of ``envs``.
    """
    wanted = set(tasks)
    for env_id in envs:
        refuse_held_out(env_id, [t for t in tasks_of(env_id) if t.id in wanted])
    start = time.monotonic()
    config = RunConfig(
        envs=list(envs),
        policy=policy,
        policy_params={**policy_params, "policy_version": version},
        k=group_size,
        seed=_step_seed(seed, version),
        tasks=list(tasks),
        label=label,
    )
    run(config, store=store, policy_factory=policy_factory, concurrency=concurrency)
    collected = read_collected(store, config.run_id, reward)
    collected.seconds = time.monotonic() - start
    return collected


def read_collected(store: Store, run_id: str, reward: RewardSource = "visible") -> Collected:
    """The scored episodes of a stored collection run.

    Raises:
        HeldOutError: the run holds an episode of a held-out split (it is no training
            collection: `refuse_held_out_episodes`).
    """
    rows = store.episodes(run_id)
    refuse_held_out_episodes(  # before a single step of theirs is read
        TrainEpisode(
            episode_id=r.id,
            group=f"{r.env_id}/{r.task_id}",
            env_id=r.env_id,
            split=r.split,
            outcome=r.outcome,
            reward=r.reward,
        )
        for r in rows
    )
    steps, verdicts = store.run_steps(run_id), store.verdicts(run_id)
    turns = store.run_turns(run_id)
    episodes = [
        _scored(
            row,
            first_steps(steps.get(row.id, []), _said(row, turns.get(row.id))),
            verdicts.get(row.id),
            reward,
        )
        for row in rows
    ]
    return Collected(run_id=run_id, episodes=episodes)


def _said(row: EpisodeRow, turns: TurnsRow | None) -> list[int]:
    """For each of the episode's steps, the policy turn that made it."""
    return said_by_step(row.messages, turns if turns is not None else TurnsRow.empty(row.id))


def _scored(
    row: EpisodeRow, steps: list[StepRow], verdict: VerdictRow | None, reward: RewardSource
) -> ScoredEpisode:
    """``steps``: one per policy turn (the step that holds the turn's tokens)."""
    components = verdict.components if verdict is not None else {}
    value = (
        row.reward if reward == "verdict" else visible_reward(row.outcome, row.reward, components)
    )
    infra = row.outcome == "infra_error"
    flags, notes = flag_names(verdict.flags if verdict is not None else [])
    episode = TrainEpisode(
        episode_id=row.id,
        group=f"{row.env_id}/{row.task_id}",
        env_id=row.env_id,
        split=row.split,
        outcome=row.outcome,
        reward=value,
        flags=flags,
        notes=notes,
        turns=[] if infra else turn_tokens(steps),
    )
    return ScoredEpisode(
        episode=episode,
        env_id=row.env_id,
        task_id=row.task_id,
        policy_version=int(row.policy_params.get("policy_version", -1)),
        hidden_pass=hidden_passed(row.outcome, components),
        tokens=row.completion_tokens,
    )


def verdict_reward(verdict: Mapping[str, Any], source: RewardSource = "visible") -> float | None:
    """The reward a verdict (as a dict) trains with, as ``gym train grpo`` and TRL score it.

    ``visible`` (the default): the visible checks' reward (`visible_reward`); ``verdict``:
    the verdict's reward. Then `training_reward`: None for infra_error, 0 with a gating
    flag. The adapters (verl, SkyRL) score their episodes with this.

    Args:
        verdict: a verdict's ``model_dump`` (outcome, reward, components, flags).
        source: where the reward comes from: ``visible`` or ``verdict``.
    """
    outcome, reward = str(verdict["outcome"]), verdict.get("reward")
    components = verdict.get("components") or {}
    if source == "visible":
        reward = visible_reward(outcome, reward, components)
    elif source != "verdict":
        raise ConfigError(f"unknown reward source {source!r}: visible or verdict")
    gating, _ = flag_names(verdict.get("flags") or [])
    return training_reward(outcome, reward, gating)
