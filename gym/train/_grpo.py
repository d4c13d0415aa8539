"""On-policy GRPO over environment episodes (``gym train grpo``).

Each step: collect G episodes per train-split task from the current policy version
through the runner and the store (`collect`), score them (training reward from the
visible checks, hidden pass rate and flag rates as monitors), let the reward-hacking
watch stop the run, turn the episodes into token-in/token-out samples with group
advantages, update the weights in place (`LocalWeights.update`; the policy samples from
the new version next step), save a checkpoint and record the step in the store.

With ``policy="openai"`` a server (vLLM) samples the episodes and the weights trained
here reach it after each update (`gym.train._sync`: a LoRA adapter loaded at run time,
every weight through TRL's client, or none); every episode records the version whose
name its requests carried, and the update leaves out episodes older than
``max_staleness`` versions (0 by default: the loop is synchronous, so only on-policy
data is trained on).

The run is resumable: its id is a hash of its configuration, each step's episodes are a
store run of their own, and the checkpoint after each step says where to go on; running
the same command again continues from the last checkpoint (and the step in flight
keeps the episodes it had committed). A rejection-sampling loop uses the same pieces:
`collect`, `LocalWeights` (its ``update`` with an SFT loss is future work there).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from gym._core._errors import ConfigError
from gym._core._paths import data_dir
from gym._policy import OpenAIPolicy, Policy
from gym._policy._tiny import TINY
from gym._store import Store, TrainStepRow
from gym.train._episodes import grpo_samples
from gym.train._grpo_collect import (
    Collected,
    RewardSource,
    ScoredEpisode,
    collect,
    env_tools,
    is_stale,
    split_stale,
    train_tasks,
)
from gym.train._grpo_watch import StepStats, WatchConfig, add_step_rewards, step_stats, watch
from gym.train._grpo_weights import CheckpointInfo, LocalWeights, PolicyKind, UpdateMetrics
from gym.train._loss import LossConfig
from gym.train._rewards import AdvantageKind
from gym.train._steps import StepCollected, StepConfig, collect_steps, step_samples
from gym.train._sync import ServerConfig, WeightSync, make_sync

__all__ = ["GrpoConfig", "GrpoResult", "TrainPolicy", "train_grpo"]

TrainPolicy = Literal["tiny", "local", "openai"]
"""Who samples the episodes: the weights in this process (tiny, local) or a server."""
_ADDED: dict[tuple[str, ...], Any] = {
    ("server",): None,
    ("max_staleness",): 0,
    ("step_sampling",): None,
    ("step_sampling", "branches_per_parent"): None,
    ("step_sampling", "credit"): "branch",
}
"""Fields added after the first release, by their path, with the value that means what
runs did before the field existed: left out of the training id at that value, so the runs
configured before keep their ids (``credit``'s default is ``tree``; ``branch`` is the
behaviour before it)."""
_NOT_IDENTITY = ("base_url", "adapter_dir", "server_adapter_dir")
"""Where the server and the adapters are: not what is trained."""
_log = logging.getLogger("gym.train")


class GrpoConfig(BaseModel):
    """Everything that defines a GRPO training run; its hash is the training id."""

    envs: list[str]
    """Environment ids (their train-split tasks are trained on)."""
    policy: TrainPolicy = "tiny"
    """tiny (a model built in code), local (a transformers model) or openai (a server
    samples; ``server`` says which and how weights reach it)."""
    model: str = "tiny"
    """``tiny`` for a fresh tiny model, else a model folder (a checkpoint) or bundled
    name; with openai, the served model's name."""
    seed: int = 0
    """Seeds the fresh model, the sampling and the episodes' reset seeds."""
    steps: int = Field(default=10, ge=1)
    """Training steps (one collection and one update each)."""
    group_size: int = Field(default=8, ge=1)
    """Episodes per task per step (G; at least 2), or with step sampling parents per task."""
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
    server: ServerConfig | None = None
    """The sampling server and the weight sync (``policy="openai"`` only)."""
    max_staleness: int = Field(default=0, ge=0)
    """An update at version v trains on episodes of versions v - max_staleness and later
    (0: on-policy only); older ones are left out and counted."""
    step_sampling: StepConfig | None = None
    """Step-level sampling (``--sampling step``: `gym.train._steps`): ``group_size``
    parents per task, each forked into K branches at its branching turns, only the
    branching turns trained. None: full-trajectory sampling (the default)."""

    @model_validator(mode="after")
    def _server_with_openai(self) -> GrpoConfig:
        if (self.policy == "openai") != (self.server is not None):
            raise ValueError("policy openai needs a server (--base-url), and only it has one")
        if self.group_size < 2 and self.step_sampling is None:
            raise ValueError("group_size: a group needs at least two episodes per task")
        if self.policy == "openai" and self.step_sampling is not None:
            raise ValueError("step sampling forks episodes in this process: not with openai yet")
        return self

    @property
    def train_id(self) -> str:
        """A short content hash of the configuration (where the server is left out)."""
        data = self.model_dump(mode="json")
        for path, default in _ADDED.items():
            *parents, key = path
            fields = functools.reduce(lambda d, k: d.get(k) or {}, parents, data)
            if key in fields and fields[key] == default:
                del fields[key]
        for key in _NOT_IDENTITY:
            (data.get("server") or {}).pop(key, None)
        blob = json.dumps(data, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    @property
    def weights(self) -> str:
        """What the trainer loads: ``model``, or the server's ``weights`` with openai."""
        return (self.server.weights if self.server else "") or self.model

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
    stale: list[int] = Field(default_factory=list)
    """Per step, the episodes left out for being older than the staleness bound."""

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
            "stale": self.stale,
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
    weights = _weights(config)
    if config.loss.beta > 0:
        weights.keep_reference()
    info = weights.resume(out, config.train_id) or CheckpointInfo(
        train_id=config.train_id, version=0, config=config.model_dump(mode="json")
    )
    sync = _sync(config, out)
    try:
        if sync is not None:
            sync.push(weights.loaded.model, weights.version)  # the server starts where we are
        loop = _Loop(config, store, weights, tasks, info, concurrency, sync)
        stopped = _steps(loop, out, progress, planned)
    finally:
        if sync is not None:
            sync.close()
    rows = store.train_steps(config.train_id)[: config.steps]
    return GrpoResult(
        train_id=config.train_id,
        envs=config.envs,
        steps=rows,
        checkpoint=str(out) if (out / "checkpoint.json").is_file() else "",
        stopped=stopped or next((r.stopped for r in rows if r.stopped), ""),
        seconds=time.monotonic() - start,
        stale=[len(stale_episodes(store, r, config.max_staleness)) for r in rows],
    )


def _steps(
    loop: _Loop, out: Path, progress: Progress | None, planned: Callable[[int, int], None] | None
) -> str:
    """Run the steps left; why they stopped early ('' when they did not)."""
    steps, done = loop.config.steps, loop.weights.version
    if planned:
        planned(steps, min(done, steps))
    for step in range(done, steps):
        row = loop.step(step, out)
        if progress:
            progress(row)
        if row.stopped:
            return row.stopped
    return ""


def _weights(config: GrpoConfig) -> LocalWeights:
    """The weights to train: the local policy's, or the trainer's copy of the served model."""
    server, lora = config.server, None
    kind: PolicyKind = "tiny" if config.policy == "tiny" else "local"
    if server is not None:
        kind = "tiny" if config.weights == TINY else "local"
        lora = server.lora if server.sync == "lora" else None
    return LocalWeights.create(kind, config.weights, seed=config.seed, lr=config.lr, lora=lora)


def _sync(config: GrpoConfig, out: Path) -> WeightSync | None:
    if config.server is None:
        return None
    name = f"boxgym-{config.train_id}"
    return make_sync(
        config.server, model=config.model, name=name, folder=out.parent / f"{out.name}.adapters"
    )


def stale_episodes(store: Store, row: TrainStepRow, max_staleness: int) -> list[str]:
    """The episodes of a step's run that its update left out as stale (ids)."""
    return [
        e.id
        for e in store.episodes(row.run_id)
        if is_stale(int(e.policy_params.get("policy_version", -1)), row.step, max_staleness)
    ]


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
        sync: WeightSync | None = None,
    ) -> None:
        self.config, self.store, self.weights, self.info = config, store, weights, info
        self.tasks, self.concurrency, self.sync = tasks, concurrency, sync
        self.tools = {env_id: env_tools(env_id) for env_id in config.envs}
        rows = store.train_steps(config.train_id)[: weights.version]
        self.history = [_stats(r) for r in rows]

    def step(self, step: int, out: Path) -> TrainStepRow:
        """Collect, score, watch, update, save and record one step."""
        started = time.monotonic()
        collected = self._collect(step)
        stats = _stats_of(step, collected)
        if isinstance(collected, StepCollected):
            stats = _with_step_rewards(stats, collected)
        self.history.append(stats)
        row = _row(self.config.train_id, step, collected, stats)
        row.stopped = watch(self.history, self.config.watch)
        if not row.stopped:
            fresh, stale = self._fresh(step, collected)
            update = self._update(fresh, row, collected)
            if self.sync is not None:
                self.sync.push(self.weights.loaded.model, self.weights.version)
            row.update_s = time.monotonic() - started - collected.seconds
            if update is not None:
                _record_update(row, update)
            row.checkpoint = str(out)
        row.tokens_per_s = collected.tokens / max(time.monotonic() - started, 1e-9)
        # The row first: killed before the checkpoint, a resume does this step again and
        # its row replaces this one; the other way round, the step's row was never made.
        self.store.add_train_step(row)
        if not row.stopped:
            self._save(collected.run_id, fresh, stale, out)
        return row

    def _collect(self, step: int) -> Collected:
        config = self.config
        if self.weights.version != step:
            raise ConfigError(f"the weights are at version {self.weights.version}, not {step}")
        settings = config.sampling()
        version, model, factory = step, config.model, self.weights.policy_factory(**settings)
        params = {**settings, "model": model, "train_id": config.train_id}
        if self.sync is not None and config.server is not None:
            version, model = self.sync.served.version, self.sync.served.model
            factory = _server_policies(config.server.base_url, model, config)
            params = {**params, "model": model, "base_url": config.server.base_url}
            params |= {"sync": config.server.sync, "train_step": step}
        envs = [e for e in config.envs if self.tasks[e]]
        what: dict[str, Any] = {
            "envs": envs,
            "tasks": sorted({t for e in envs for t in self.tasks[e]}),
            "group_size": config.group_size,
            "seed": config.seed,
            "version": version,
            "policy": config.policy,
            "policy_params": params,
            "policy_factory": factory,
            "reward": config.reward,
            "concurrency": self.concurrency,
            "label": f"train {config.train_id} step {step}",
        }
        if config.step_sampling is not None:
            return collect_steps(self.store, step=config.step_sampling, **what)
        return collect(self.store, **what)

    def _fresh(
        self, step: int, collected: Collected
    ) -> tuple[list[ScoredEpisode], list[ScoredEpisode]]:
        """The episodes the update may train on, and those older than the bound (logged)."""
        fresh, stale = split_stale(collected.episodes, step, self.config.max_staleness)
        if stale:
            versions = sorted({e.policy_version for e in stale})
            _log.warning(
                "step %d: %d of %d episodes left out, produced by versions %s, older than "
                "%d - %d (--max-staleness)",
                step,
                len(stale),
                len(collected.episodes),
                versions,
                step,
                self.config.max_staleness,
            )
        return fresh, stale

    def _update(
        self, episodes: list[ScoredEpisode], row: TrainStepRow, collected: Collected
    ) -> UpdateMetrics | None:
        """The step's update; None when every group had equal rewards (nothing to learn)."""
        config, weights = self.config, self.weights
        scored = {e.episode.episode_id: e for e in episodes}
        eos = weights.loaded.tokenizer.eos_token_id
        if isinstance(collected, StepCollected) and config.step_sampling is not None:
            built = step_samples(
                list(scored.values()),
                collected.branches,
                config.advantage,
                weight=config.step_sampling.step_reward_weight,
                eos_token_id=eos,
                credit=config.step_sampling.credit,
            )
        else:
            built = grpo_samples(
                [e.episode for e in scored.values()], config.advantage, eos_token_id=eos
            )
        row.zero_variance_fraction = built.advantages.zero_variance_fraction
        if not built.samples:
            weights.skip()
            return None
        owners = [scored[s.episode_id] for s in built.samples]
        allowed = None  # a server's constrained decoding is its own: no grammar to replay
        if self.sync is None:
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

    def _save(
        self, run_id: str, fresh: list[ScoredEpisode], stale: list[ScoredEpisode], out: Path
    ) -> Path:
        info = self.info
        trained = [e for e in fresh if e.training_reward is not None]
        info.version = self.weights.version
        info.tasks = sorted({*info.tasks, *(f"{e.env_id}/{e.task_id}" for e in trained)})
        info.episodes = [*info.episodes, *(e.episode.episode_id for e in trained)]
        info.stale = [*info.stale, *(e.episode.episode_id for e in stale)]
        info.runs = [*info.runs, run_id]
        return self.weights.save(out, info)


def _server_policies(base_url: str, model: str, config: GrpoConfig) -> Callable[[], Policy]:
    """Builds policies that sample from ``model`` on the server (one per worker).

    No seed is sent: one seed for every request would make a group's G episodes the
    same sample.
    """

    def make() -> Policy:
        return OpenAIPolicy(
            model,
            base_url,
            temperature=config.temperature,
            max_tokens=config.max_new_tokens,
            logprobs=True,
            return_token_ids=True,
        )

    return make


def _with_step_rewards(stats: StepStats, collected: StepCollected) -> StepStats:
    """The watch's figures with the branches' step rewards against their hidden checks."""
    judged = [e for e in collected.graded if e.episode.episode_id in collected.branches]
    rewards = [[collected.branches[e.episode.episode_id].step_reward] for e in judged]
    return add_step_rewards(stats, rewards, [bool(e.hidden_pass) for e in judged])


def _stats_of(step: int, collected: Collected) -> StepStats:
    graded = collected.monitored
    return step_stats(
        step,
        [e.training_reward or 0.0 for e in graded],
        [bool(e.hidden_pass) for e in graded],
        [e.episode.flags for e in graded],
        notes=[e.episode.notes for e in graded],
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
