"""Rejection-sampling fine-tuning (``gym train rft``): learn what passed, keep what helps.

For people who want a local model to get better at an environment's train tasks with
the least machinery: no reward model, no advantages, no reference model. One round:

1. Collect: K episodes per train task from the current model at a sampling
   temperature, run by the runner into the store (a run like any other: resumable,
   reportable; its ``policy_params`` name the policy version that produced it).
2. Select (`select_episodes`): keep the verified episodes (passed, no flag at all),
   drop duplicates (the same sampled tokens for the same task) and keep at most
   ``cap`` per task, the shortest first, so that easy tasks do not dominate.
3. Fine-tune: the supervised loss (`gym.train.batch_sft_loss`: negative log-likelihood
   of the sampled tokens only, token-in/token-out samples from `episode_samples`),
   which is the policy gradient with advantage 1 for kept and 0 for rejected episodes.
4. Evaluate the fine-tuned model on the held-out splits and promote it only if its
   pass@1 rises above the best so far (`promote`); otherwise its weights are put back.
   A promoted model is saved as a Hugging Face folder with ``rft.json`` recording the
   tasks and episodes it learnt from.

Which tasks are trained on and which judge is the families' word (`split_use`): the
tasks of training splits are collected, those of held-out splits evaluated, whatever
the splits are named (`role_tasks`). Training refuses held-out tasks and episodes
(training on them makes their scores meaningless).

The model is trained in this process, in place: the policies that run the episodes
share it (`gym._policy.LocalPolicy.of`), so no weights are copied to sample from the
updated model. torch is imported only inside the functions that use it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from gym._core._errors import ConfigError, InfraError
from gym._core._models import SplitUse
from gym._envs._env import env_of
from gym._envs._registry import make, tasks_of
from gym._envs._splits import refuse_held_out, split_use, split_uses
from gym._policy import LocalPolicy, Policy, policy_from_name
from gym._policy._grammar import allowed_tokens
from gym._run._runner import RunConfig, RunProgress, expand_envs, run
from gym.train._batch import Batch, batch_sft_loss, collate, sample_allowed
from gym.train._episodes import TrainEpisode, refuse_held_out_episodes
from gym.train._samples import Sample, episode_samples

if TYPE_CHECKING:
    from gym._policy._local import LocalModel
    from gym._store import Store

__all__ = [
    "RFTConfig",
    "RFTResult",
    "RoundResult",
    "Selection",
    "promote",
    "rft_envs",
    "role_tasks",
    "select_episodes",
    "train_rft",
]


class RFTConfig(BaseModel):
    """Everything that defines a rejection-sampling run; its hash names its runs."""

    envs: list[str]
    """Environment ids (or suites, such as ``bundled``)."""
    policy: str = "local"
    """A policy that runs a model in this process: ``local`` or ``tiny``."""
    policy_params: dict[str, Any] = Field(default_factory=dict)
    """Its constructor arguments (``model``, ``max_new_tokens``, ``init_seed``...)."""
    rounds: int = Field(default=1, ge=1)
    """Collect, fine-tune and evaluate this many times."""
    k: int = Field(default=4, ge=1)
    """Episodes per train task per round."""
    cap: int = Field(default=2, ge=1)
    """Kept episodes per task per round, at most."""
    temperature: float = Field(default=1.0, gt=0)
    """Sampling temperature while collecting."""
    eval_k: int = Field(default=1, ge=1)
    """Episodes per eval task (pass@1 is their mean)."""
    eval_temperature: float = Field(default=0.0, ge=0)
    """Sampling temperature of the evaluation (0: greedy)."""
    lr: float = Field(default=1e-5, gt=0)
    """AdamW learning rate."""
    epochs: int = Field(default=2, ge=1)
    """Passes over the kept samples per round."""
    batch_size: int = Field(default=4, ge=1)
    """Samples per optimizer step."""
    seed: int = 0
    """Seeds the collection runs (one per round), the shuffling and the evaluation."""
    limit: int | None = None
    """At most this many tasks per environment and split (per environment and role
    when a role's splits are not one name across the environments: `role_tasks`)."""
    tasks: list[str] | None = None
    """Only these training task ids (held-out ids are refused)."""
    max_steps: int | None = None
    """Override of the environments' step budgets."""

    @property
    def rft_id(self) -> str:
        """A short content hash of the configuration."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:12]


class Selection(BaseModel):
    """What `select_episodes` kept of a round's episodes, and why the rest went."""

    kept: list[TrainEpisode]
    """Verified, distinct, at most ``cap`` per task."""
    episodes: int
    """Episodes looked at."""
    verified: int
    """Of those, passed with no flag."""
    duplicates: int
    """Verified episodes dropped as the same tokens as a kept one of the same task."""
    capped: int
    """Distinct verified episodes dropped by the per-task cap."""


class RoundResult(BaseModel):
    """One round: what was collected and kept, the fine-tuning, the evaluation."""

    round: int
    """1, 2, ..."""
    collect_run: str
    """The run id of the collection (training splits)."""
    eval_run: str = ""
    """The run id of the candidate's evaluation ('' when nothing was kept)."""
    episodes: int
    """Episodes collected (infra errors included)."""
    infra_errors: int
    """Of those, ended by infrastructure (never kept, never counted as failed)."""
    verified: int
    """Passed with no flag."""
    kept: int
    """Trained on."""
    duplicates: int
    """Dropped as duplicates."""
    capped: int
    """Dropped by the per-task cap."""
    samples: int = 0
    """Training sequences built from the kept episodes."""
    tokens: int = 0
    """Sampled tokens learnt (per epoch)."""
    losses: list[float] = Field(default_factory=list)
    """The loss of each optimizer step."""
    train_s: float = 0.0
    """Seconds of fine-tuning."""
    pass_at_1_before: float
    """Held-out pass@1 of the best model so far."""
    pass_at_1_after: float | None = None
    """Held-out pass@1 of the fine-tuned candidate (None when nothing was kept)."""
    promoted: bool = False
    """The candidate became the model (its pass@1 rose)."""
    checkpoint: str = ""
    """Where the promoted model was saved."""


class RFTResult(BaseModel):
    """A whole rejection-sampling run."""

    rft_id: str
    """The configuration's hash (`RFTConfig.rft_id`)."""
    baseline_run: str
    """The run id of the starting model's evaluation."""
    baseline_pass_at_1: float
    """Held-out pass@1 of the starting model."""
    rounds: list[RoundResult]
    """In order."""
    pass_at_1: float
    """Held-out pass@1 of the final model (the best evaluated)."""
    checkpoint: str = ""
    """The last promoted checkpoint ('' when no round was promoted)."""


def promote(best: float, candidate: float) -> bool:
    """Whether a candidate replaces the model: only when held-out pass@1 rises.

    Args:
        best: the held-out pass@1 of the model so far.
        candidate: that of the fine-tuned candidate.
    """
    return candidate > best


def rft_envs(config: RFTConfig) -> list[str]:
    """The environments to train on, after refusing held-out tasks (`gym._envs._splits`).

    Raises:
        HeldOutError: ``tasks`` names a task of a held-out split.
        ConfigError: an environment has no training task or no held-out task (nothing
            to learn from, or nothing to judge by).
    """
    envs = expand_envs(config.envs)
    for env_id in envs:
        tasks = tasks_of(env_id)
        refuse_held_out(env_id, [t for t in tasks if t.id in set(config.tasks or [])])
        roles = {split_use(env_id, t.split) for t in tasks}
        for role in ("training", "held-out"):
            if role not in roles:
                raise ConfigError(f"{env_id} has no task of a {role} split: rft needs both")
    return envs


def _sampled(episode: TrainEpisode) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(turn.completion) for turn in episode.turns)


def role_tasks(
    envs: Sequence[str], role: SplitUse, ids: Sequence[str] | None = None
) -> tuple[str | None, list[str] | None]:
    """The ``split`` and ``tasks`` of a run of exactly the tasks of one role.

    When every environment's splits of the role are one and the same name, that split
    (and ``ids`` as they are: the runner's own selection, as before roles). Otherwise
    (MBPP trains on ``prompt`` and ``train``) no split and the ids of the role's tasks
    (only those of ``ids`` when given), so the runner's ``limit`` counts per
    environment and role.

    Raises:
        ConfigError: an id is of the role in one environment and of another in
            another (a run names ids across all its environments: it would run both).
    """
    names = {n for e in envs for n, use in split_uses(e).items() if use == role}
    if len(names) == 1 and all(
        {n for n, use in split_uses(e).items() if use == role} == names for e in envs
    ):
        return names.pop(), list(ids) if ids is not None else None
    wanted = set(ids) if ids is not None else None
    chosen: set[str] = set()
    other: set[str] = set()
    for env_id in envs:
        for task in tasks_of(env_id):
            mine = split_use(env_id, task.split) == role
            (chosen if mine else other).add(task.id)
    both = sorted(chosen & other)
    if both:
        raise ConfigError(
            f"task ids {both[:5]} are {role} in one of {', '.join(envs)} and not in "
            "another: run those environments apart"
        )
    return None, sorted(t for t in chosen if wanted is None or t in wanted)


def select_episodes(episodes: Sequence[TrainEpisode], cap: int) -> Selection:
    """The episodes to fine-tune on: verified, distinct, at most ``cap`` per task.

    Of the same task, episodes whose sampled tokens are identical count once; each
    task keeps its ``cap`` shortest (fewest sampled tokens, then by episode id).

    Args:
        episodes: a round's episodes.
        cap: the most kept per task.

    Raises:
        HeldOutError: an episode is of a held-out split of its environment (or names
            none: `refuse_held_out_episodes`).
    """
    refuse_held_out_episodes(episodes)
    good = [e for e in episodes if e.verified]
    good.sort(key=lambda e: (e.group, sum(len(t.completion) for t in e.turns), e.episode_id))
    seen: set[tuple[str, tuple[tuple[int, ...], ...]]] = set()
    per_task: dict[str, int] = {}
    kept, duplicates, capped = [], 0, 0
    for episode in good:
        key = (episode.group, _sampled(episode))
        if key in seen:
            duplicates += 1
        elif per_task.get(episode.group, 0) >= cap:
            capped += 1
        else:
            seen.add(key)
            per_task[episode.group] = per_task.get(episode.group, 0) + 1
            kept.append(episode)
    return Selection(
        kept=kept,
        episodes=len(episodes),
        verified=len(good),
        duplicates=duplicates,
        capped=capped,
    )


# -- the loop ------------------------------------------------------------------------------


class _Trainer:
    """One rejection-sampling run: the model in memory, its store and its settings."""

    def __init__(
        self,
        config: RFTConfig,
        store: Store,
        envs: list[str],
        policy: LocalPolicy,
        out: Path,
        progress: Callable[[str], None],
        events: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.config = config
        self.events = events
        self.store = store
        self.policy = policy
        self.loaded: LocalModel = policy.load()
        self.out = out
        self.say = progress
        self.envs = envs
        self.model_name = str(config.policy_params.get("model", policy.model))
        self._tools: dict[str, list[dict[str, Any]]] = {}

    def factory(self, temperature: float, seed: int) -> Callable[[], Policy]:
        """Policies over the model in memory (the runner builds one per worker)."""
        settings = {
            "max_new_tokens": self.policy.max_new_tokens,
            "temperature": temperature,
            "top_p": self.policy.top_p,
            "seed": seed,
            "threads": None,
            "constrained": self.policy.constrained,
        }
        return functools.partial(type(self.policy).of, self.loaded, **settings)

    def run_config(self, version: str, role: SplitUse, seed: int) -> RunConfig:
        """The runner's configuration of a collection (``training``) or an evaluation."""
        collect = role == "training"
        split, tasks = role_tasks(self.envs, role, self.config.tasks if collect else None)
        temperature = self.config.temperature if collect else self.config.eval_temperature
        params = {
            **self.config.policy_params,
            "model": self.model_name,
            "temperature": temperature,
            "policy_version": f"rft {self.config.rft_id} {version}",
        }
        return RunConfig(
            envs=self.envs,
            policy=self.config.policy,
            policy_params=params,
            k=self.config.k if collect else self.config.eval_k,
            seed=seed,
            split=split,
            limit=self.config.limit,
            tasks=tasks,
            max_steps=self.config.max_steps,
            label=f"rft {self.config.rft_id} {version} {'collect' if collect else 'eval'}",
        )

    def episodes(self, config: RunConfig, temperature: float) -> tuple[RunProgress, str]:
        """Run (or resume) a run over the model in memory."""
        factory = self.factory(temperature, config.seed)
        state = run(
            config, store=self.store, policy_factory=factory, concurrency=1, events=self.events
        )
        return state, config.run_id

    def evaluate(self, version: str) -> tuple[float, str]:
        """Held-out pass@1 of the model as it is now, and the evaluation's run id.

        Raises:
            InfraError: no eval episode could be graded.
        """
        config = self.run_config(version, "held-out", self.config.seed)
        self.say(f"evaluating {version} on the held-out splits ({config.run_id})")
        self.episodes(config, self.config.eval_temperature)
        outcomes = list(self.store.episode_outcomes(config.run_id).values())
        graded = [o for o in outcomes if o != "infra_error"]
        if not graded:
            raise InfraError(
                f"none of the {len(outcomes)} eval episodes of run {config.run_id} could be "
                "graded (infra errors): check `gym doctor`, then run the same command again"
            )
        return graded.count("pass") / len(graded), config.run_id

    def collect(self, round_no: int) -> tuple[Selection, RunConfig, int]:
        """A round's train episodes, selected; and how many ended in infra errors."""
        config = self.run_config(f"r{round_no}", "training", self.config.seed + round_no)
        self.say(f"round {round_no}: collecting ({config.run_id})")
        self.episodes(config, self.config.temperature)
        rows = self.store.episodes(config.run_id)
        episodes = [TrainEpisode.from_store(self.store, row.id) for row in rows]
        infra = sum(e.outcome == "infra_error" for e in episodes)
        return select_episodes(episodes, self.config.cap), config, infra

    def samples(self, kept: Sequence[TrainEpisode]) -> list[tuple[Sample, Any]]:
        """Token-in/token-out samples of the kept episodes (weight 1), with their masks.

        The mask of a sample is the tokens the grammar allowed at each sampled position
        (`allowed_tokens`, replayed with the turn's budget), or None when the policy was
        not constrained: the loss is then that of the distribution the policy sampled
        from, and the tokens the grammar forced (probability 1) teach nothing.
        """
        eos = self.loaded.tokenizer.eos_token_id
        out = []
        for episode in kept:
            for sample in episode_samples(episode.turns, eos_token_id=eos).samples:
                weighted = sample.model_copy(update={"advantage": 1.0})
                out.append((weighted, self.allowed(episode, sample)))
        return out

    def allowed(self, episode: TrainEpisode, sample: Sample) -> Any:
        """The grammar's allowed tokens at each position of a sample (None: unconstrained)."""
        if not self.policy.constrained:
            return None
        tools = self.tools(episode.env_id)
        grammar, rows = self.loaded.grammar(), []
        for index in sample.turns:
            turn = episode.turns[index]
            budget = self.policy.turn_budget(len(turn.prompt))
            rows.append(allowed_tokens(grammar, tools, turn.completion, budget))
        width = int(self.loaded.model.get_output_embeddings().weight.shape[0])
        return sample_allowed(sample, rows, width)

    def tools(self, env_id: str) -> list[dict[str, Any]]:
        """The tools an environment offers (as its episodes offered them to the policy)."""
        if env_id not in self._tools:
            env = make(env_id)
            try:
                self._tools[env_id] = [s.openai_schema() for s, _ in env_of(env).tools.values()]
            finally:
                env.close()
        return self._tools[env_id]

    def fine_tune(self, samples: list[tuple[Sample, Any]], round_no: int) -> list[float]:
        """Epochs of the supervised loss over the samples; the loss of each step."""
        torch = importlib.import_module("torch")
        model, cfg = self.loaded.model, self.config
        pad = self.loaded.tokenizer.pad_token_id
        pad = self.loaded.tokenizer.eos_token_id if pad is None else pad
        optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0)
        order, shuffle = list(samples), random.Random(f"{cfg.seed}:{round_no}")
        losses: list[float] = []
        model.train()
        try:
            with self.loaded.lock:
                for _ in range(cfg.epochs):
                    shuffle.shuffle(order)
                    for start in range(0, len(order), cfg.batch_size):
                        chunk = order[start : start + cfg.batch_size]
                        masks = [m for _, m in chunk if m is not None]
                        allowed = masks if len(masks) == len(chunk) else None
                        batch = collate([s for s, _ in chunk], pad, allowed=allowed)
                        losses.append(_step(model, optimizer, batch))
        finally:
            model.eval()
        return losses

    def snapshot(self) -> dict[str, Any]:
        """A copy of the model's weights (to put back when a candidate is not promoted)."""
        return {k: v.detach().clone() for k, v in self.loaded.model.state_dict().items()}

    def save(self, result: RoundResult, kept: Sequence[TrainEpisode]) -> str:
        """Save the promoted model with what it learnt from; the folder."""
        folder = self.out / f"round-{result.round}"
        folder.mkdir(parents=True, exist_ok=True)
        self.loaded.model.save_pretrained(folder)
        self.loaded.tokenizer.save_pretrained(folder)
        manifest = {
            "rft_id": self.config.rft_id,
            "parent": self.model_name,
            "config": self.config.model_dump(mode="json"),
            "tasks": sorted({e.group for e in kept}),
            "episodes": [e.episode_id for e in kept],
            "round": result.model_dump(mode="json", exclude={"losses"}),
        }
        (folder / "rft.json").write_text(json.dumps(manifest, indent=2) + "\n")
        return str(folder)

    def round(self, round_no: int, best: float) -> tuple[RoundResult, float]:
        """Collect, select, fine-tune, evaluate, promote or put back."""
        selection, config, infra = self.collect(round_no)
        result = RoundResult(
            round=round_no,
            collect_run=config.run_id,
            infra_errors=infra,
            pass_at_1_before=best,
            **selection.model_dump(exclude={"kept"}),
            kept=len(selection.kept),
        )
        self.say(
            f"round {round_no}: {selection.verified} verified of {selection.episodes}, "
            f"{len(selection.kept)} kept"
        )
        if not selection.kept:
            return result, best
        samples = self.samples(selection.kept)
        before = self.snapshot()
        start = time.monotonic()
        result.losses = self.fine_tune(samples, round_no)
        result.train_s = round(time.monotonic() - start, 2)
        result.samples, result.tokens = len(samples), sum(s.sampled for s, _ in samples)
        after, result.eval_run = self.evaluate(f"r{round_no} candidate")
        result.pass_at_1_after = after
        result.promoted = promote(best, after)
        if not result.promoted:
            self.loaded.model.load_state_dict(before)
            return result, best
        result.checkpoint = self.save(result, selection.kept)
        self.model_name = result.checkpoint
        return result, after


def _step(model: Any, optimizer: Any, batch: Batch) -> float:
    """One optimizer step of the supervised loss (gradients clipped to norm 1); the loss."""
    torch = importlib.import_module("torch")
    loss, _ = batch_sft_loss(model, batch)
    optimizer.zero_grad()
    loss.backward()  # type: ignore[no-untyped-call]  # torch's backward is untyped
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return float(loss.detach())


def rft_policy(config: RFTConfig) -> LocalPolicy:
    """The policy whose model rft trains (one that runs a model in this process).

    Raises:
        ConfigError: the policy does not run a model in this process.
    """
    policy = policy_from_name(config.policy, **config.policy_params)
    if not isinstance(policy, LocalPolicy):
        raise ConfigError(
            f"rft fine-tunes a model in this process: --policy local or tiny, not {config.policy!r}"
        )
    return policy


def train_rft(
    config: RFTConfig,
    *,
    store: Store,
    out: str | Path,
    policy: LocalPolicy | None = None,
    progress: Callable[[str], None] | None = None,
    events: Callable[[dict[str, Any]], None] | None = None,
) -> RFTResult:
    """Rejection-sampling fine-tuning: rounds of collect, select, fine-tune, evaluate.

    Re-running the same configuration against the same store reuses the episodes
    already committed (each collection and evaluation is a resumable run).

    Args:
        config: what to train and how.
        store: where every episode is committed.
        out: the folder promoted checkpoints are saved under (``round-N``).
        policy: the policy whose model is trained in place (by default built from
            ``config.policy`` and ``config.policy_params``).
        progress: called with a line of text at each stage.
        events: receives the events of each collection's and evaluation's run (see
            `gym.runs.run`): `gym._core._progress.RunEvents` shows their progress.

    Raises:
        EnvNotFound: an unknown environment (before the model is built or loaded).
        ConfigError: a policy that is not local, held-out tasks to train on.
        InfraError: an evaluation could not grade a single episode.
    """
    envs = rft_envs(config)  # before the model is built: an unknown env costs nothing
    trainer = _Trainer(
        config,
        store,
        envs,
        policy or rft_policy(config),
        Path(out),
        progress or (lambda _: None),
        events,
    )
    best, baseline_run = trainer.evaluate("base")
    baseline, rounds = best, []
    for round_no in range(1, config.rounds + 1):
        result, best = trainer.round(round_no, best)
        rounds.append(result)
    checkpoint = next((r.checkpoint for r in reversed(rounds) if r.promoted), "")
    return RFTResult(
        rft_id=config.rft_id,
        baseline_run=baseline_run,
        baseline_pass_at_1=baseline,
        rounds=rounds,
        pass_at_1=best,
        checkpoint=checkpoint,
    )
