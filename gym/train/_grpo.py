"""On-policy GRPO over environment episodes (``gym train grpo``).

Each step: collect G episodes per train-split task from the current policy version
through the runner and the store (`collect`), score them (training reward from the
visible checks, hidden pass rate and flag rates as monitors), let the reward-hacking
watch stop the run, turn the episodes into token-in/token-out samples with group
advantages, update the weights in place (`LocalWeights.update`; the policy samples from
the new version next step), save a checkpoint and record the step in the store.

The run is resumable: its id is a hash of its configuration, each step's episodes are a
store run of their own, and the checkpoint after each step says where to go on; running
the same command again continues from the last checkpoint (and the step in flight
keeps the episodes it had committed). A rejection-sampling loop uses the same pieces:
`collect`, `LocalWeights` (its ``update`` with an SFT loss is future work there).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from gym._core._errors import ConfigError
from gym._core._paths import data_dir
from gym._store import Store, TrainStepRow
from gym.train._episodes import grpo_samples
from gym.train._grpo_collect import (
    Collected,
    RewardSource,
    collect,
    env_tools,
    train_tasks,
)
from gym.train._grpo_watch import StepStats, WatchConfig, step_stats, watch
from gym.train._grpo_weights import CheckpointInfo, LocalWeights, PolicyKind, UpdateMetrics
from gym.train._loss import LossConfig
from gym.train._rewards import AdvantageKind

__all__ = ["GrpoConfig", "GrpoResult", "train_grpo"]


class GrpoConfig(BaseModel):
    """Everything that defines a GRPO training run; its hash is the training id."""

    envs: list[str]
    """Environment ids (their train-split tasks are trained on)."""
    policy: PolicyKind = "tiny"
    """tiny (a model built in code) or local (a transformers model)."""
    model: str = "tiny"
    """``tiny`` for a fresh tiny model, else a model folder (a checkpoint) or bundled name."""
    seed: int = 0
    """Seeds the fresh model, the sampling and the episodes' reset seeds."""
    steps: int = Field(default=10, ge=1)
    """Training steps (one collection and one update each)."""
    group_size: int = Field(default=8, ge=2)
    """Episodes per task per step (G)."""
    tasks: list[str] | None = None
    """Only these train-split tasks."""
    lr: float = Field(default=3e-3, gt=0)
    """Adam learning rate."""
    updates_per_step: int = Field(default=4, ge=1)
    """Optimizer steps on each step's batch (mu; above 1 the ratio is clipped)."""
    temperature: float = Field(default=1.0, gt=0)
    """Sampling temperature of the episodes (the loss uses the same)."""
    max_new_tokens: int = Field(default=96, ge=1)
    """The most tokens one turn may generate."""
    advantage: AdvantageKind = "grpo"
    """grpo, dr_grpo or rloo."""
    loss: LossConfig = Field(default_factory=LossConfig)
    """Aggregation, clipping, KL and importance-sampling settings."""
    reward: RewardSource = "visible"
    """visible (the visible checks; the hidden ones are a held-out monitor) or verdict."""
    watch: WatchConfig = Field(default_factory=WatchConfig)
    """Bounds of the reward-hacking watch."""

    @property
    def train_id(self) -> str:
        """A short content hash of the configuration."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def sampling(self) -> dict[str, Any]:
        """The policy settings of its episodes."""
        return {
            "temperature": self.temperature,
            "max_new_tokens": self.max_new_tokens,
            "seed": self.seed,
        }


class GrpoResult(BaseModel):
    """What a training run did, step by step (printed by ``gym train grpo --json``)."""

    train_id: str
    """The training id."""
    envs: list[str]
    """Its environments."""
    steps: list[TrainStepRow] = Field(default_factory=list)
    """One row per step, as stored."""
    checkpoint: str = ""
    """The last checkpoint's folder."""
    stopped: str = ""
    """Why training stopped early ('' when it ran every step)."""
    seconds: float = 0.0
    """Wall-clock seconds of this invocation."""

    def summary(self) -> dict[str, Any]:
        """The JSON summary: per-step lists (``mean_reward`` one value per step) and more."""
        rows = self.steps
        return {
            "train_id": self.train_id,
            "envs": self.envs,
            "steps": len(rows),
            "mean_reward": [round(r.mean_reward, 4) for r in rows],
            "hidden_pass_rate": [round(r.hidden_pass_rate, 4) for r in rows],
            "flag_rates": [r.flag_rates for r in rows],
            "zero_variance_fraction": [round(r.zero_variance_fraction, 4) for r in rows],
            "update_kl": [round(r.update_kl, 6) for r in rows],
            "clip_fraction": [round(r.clip_fraction, 4) for r in rows],
            "tokens_per_s": [round(r.tokens_per_s, 1) for r in rows],
            "runs": [r.run_id for r in rows],
            "checkpoint": self.checkpoint,
            "stopped": self.stopped,
            "seconds": round(self.seconds, 1),
        }


Progress = Callable[[TrainStepRow], None]


def train_grpo(
    config: GrpoConfig,
    *,
    store: Store,
    out: Path | None = None,
    concurrency: int = 4,
    progress: Progress | None = None,
    planned: Callable[[int, int], None] | None = None,
) -> GrpoResult:
    """Train (or resume training) a local policy with GRPO on environment episodes.

    Args:
        config: what to train.
        store: where episodes and step records go.
        out: the checkpoint folder (``<data dir>/train/<train id>`` by default).
        concurrency: episodes at once.
        progress: called with each step's row once it is recorded.
        planned: called once before the first step with (steps in all, steps done
            before: a resume).

    Raises:
        ConfigError: eval-split tasks named, no train-split task, or a checkpoint folder
            that belongs to another run.
    """
    start = time.monotonic()
    tasks = train_tasks(config.envs, config.tasks)
    out = out or data_dir() / "train" / config.train_id
    weights = LocalWeights.create(config.policy, config.model, seed=config.seed, lr=config.lr)
    if config.loss.beta > 0:
        weights.keep_reference()
    info = weights.resume(out, config.train_id) or CheckpointInfo(
        train_id=config.train_id, version=0, config=config.model_dump(mode="json")
    )
    loop = _Loop(config, store, weights, tasks, info, concurrency)
    stopped = ""
    if planned:
        planned(config.steps, min(weights.version, config.steps))
    for step in range(weights.version, config.steps):
        row = loop.step(step, out)
        if progress:
            progress(row)
        if row.stopped:
            stopped = row.stopped
            break
    rows = store.train_steps(config.train_id)[: config.steps]
    return GrpoResult(
        train_id=config.train_id,
        envs=config.envs,
        steps=rows,
        checkpoint=str(out) if (out / "checkpoint.json").is_file() else "",
        stopped=stopped or next((r.stopped for r in rows if r.stopped), ""),
        seconds=time.monotonic() - start,
    )


class _Loop:
    """The state one training run carries from step to step."""

    def __init__(
        self,
        config: GrpoConfig,
        store: Store,
        weights: LocalWeights,
        tasks: dict[str, list[str]],
        info: CheckpointInfo,
        concurrency: int,
    ) -> None:
        self.config, self.store, self.weights, self.info = config, store, weights, info
        self.tasks, self.concurrency = tasks, concurrency
        self.tools = {env_id: env_tools(env_id) for env_id in config.envs}
        rows = store.train_steps(config.train_id)[: weights.version]
        self.history = [_stats(r) for r in rows]

    def step(self, step: int, out: Path) -> TrainStepRow:
        """Collect, score, watch, update, save and record one step."""
        started = time.monotonic()
        collected = self._collect(step)
        stats = _stats_of(step, collected)
        self.history.append(stats)
        row = _row(self.config.train_id, step, collected, stats)
        row.stopped = watch(self.history, self.config.watch)
        if not row.stopped:
            update = self._update(collected, row)
            row.update_s = time.monotonic() - started - collected.seconds
            if update is not None:
                _record_update(row, update)
            row.checkpoint = str(self._save(collected, out))
        row.tokens_per_s = collected.tokens / max(time.monotonic() - started, 1e-9)
        self.store.add_train_step(row)
        return row

    def _collect(self, step: int) -> Collected:
        config = self.config
        if self.weights.version != step:
            raise ConfigError(f"the weights are at version {self.weights.version}, not {step}")
        settings = config.sampling()
        params = {**settings, "model": config.model, "train_id": config.train_id}
        envs = [e for e in config.envs if self.tasks[e]]
        return collect(
            self.store,
            envs=envs,
            tasks=sorted({t for e in envs for t in self.tasks[e]}),
            group_size=config.group_size,
            seed=config.seed,
            version=step,
            policy=config.policy,
            policy_params=params,
            policy_factory=self.weights.policy_factory(**settings),
            reward=config.reward,
            concurrency=self.concurrency,
            label=f"train {config.train_id} step {step}",
        )

    def _update(self, collected: Collected, row: TrainStepRow) -> UpdateMetrics | None:
        """The step's update; None when every group had equal rewards (nothing to learn)."""
        config, weights = self.config, self.weights
        scored = {e.episode.episode_id: e for e in collected.episodes}
        eos = weights.loaded.tokenizer.eos_token_id
        built = grpo_samples(
            [e.episode for e in scored.values()], config.advantage, eos_token_id=eos
        )
        row.zero_variance_fraction = built.advantages.zero_variance_fraction
        if not built.samples:
            weights.skip()
            return None
        owners = [scored[s.episode_id] for s in built.samples]
        allowed = weights.samples_allowed(
            built.samples,
            [e.episode.turns for e in owners],
            [self.tools[e.env_id] for e in owners],
        )
        batch = weights.batch(built.samples, allowed)
        return weights.update(
            batch,
            config.loss,
            iterations=config.updates_per_step,
            temperature=config.temperature,
        )

    def _save(self, collected: Collected, out: Path) -> Path:
        info = self.info
        trained = [e for e in collected.episodes if e.training_reward is not None]
        info.version = self.weights.version
        info.tasks = sorted({*info.tasks, *(f"{e.env_id}/{e.task_id}" for e in trained)})
        info.episodes = [*info.episodes, *(e.episode.episode_id for e in trained)]
        info.runs = [*info.runs, collected.run_id]
        return self.weights.save(out, info)


def _stats_of(step: int, collected: Collected) -> StepStats:
    graded = collected.graded
    return step_stats(
        step,
        [e.training_reward or 0.0 for e in graded],
        [bool(e.hidden_pass) for e in graded],
        [e.episode.flags for e in graded],
    )


def _stats(row: TrainStepRow) -> StepStats:
    return StepStats(
        step=row.step,
        mean_reward=row.mean_reward,
        hidden_pass_rate=row.hidden_pass_rate,
        flag_rates=row.flag_rates,
    )


def _row(train_id: str, step: int, collected: Collected, stats: StepStats) -> TrainStepRow:
    return TrainStepRow(
        train_id=train_id,
        step=step,
        run_id=collected.run_id,
        created_at=time.time(),
        episodes=len(collected.episodes),
        infra_errors=len(collected.episodes) - len(collected.graded),
        mean_reward=stats.mean_reward,
        hidden_pass_rate=stats.hidden_pass_rate,
        flag_rates=stats.flag_rates,
        tokens=collected.tokens,
        collect_s=collected.seconds,
    )


def _record_update(row: TrainStepRow, update: UpdateMetrics) -> None:
    row.loss = update.loss.loss
    row.kl = update.loss.kl
    row.update_kl = update.update_kl
    row.clip_fraction = update.loss.clip_fraction
