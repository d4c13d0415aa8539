"""TRL's GRPOTrainer on boxgym environments: TRL trains, boxgym runs the episodes.

TRL (1.16) lets a trainer hand generation to a rollout hook, ``GRPOTrainer(...,
rollout_func=f)``, called as ``f(prompts, trainer)`` once per generation batch. It must
return a dict of lists, one item per prompt: ``prompt_ids``, ``completion_ids`` and
``logprobs``; an ``env_mask`` (1 on the model's tokens, 0 on the environment's) is
taken as the loss mask, and every other key is passed to the reward functions::

    from trl import GRPOConfig, GRPOTrainer
    import gym.train

    rollout = gym.train.trl_rollout("boxgym/Learn-v0", db="sqlite:///runs.db")
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=gym.train.trl_reward,
        train_dataset=rollout.dataset(),  # one row per train-split task
        rollout_func=rollout,
        args=GRPOConfig(num_generations=8, ...),
    )
    trainer.train()

`TrlRollout` maps each prompt back to its task, runs the batch's episodes through the
runner and the store (one run per generation, real containers, every episode recording
``policy_version`` = the trainer's ``global_step``), with a `gym.policies.LocalPolicy`
over the trainer's own model (in process, so the weights TRL updates are the weights
that sample next; decoding constrained to valid tool calls, sampled at the trainer's
temperature), and returns each episode as one token sequence (`trl_fields`): the first
turn's prompt, then the sampled tokens of each turn with the environment's tokens
between turns (tool results, as the policy's chat template rendered them), masked out
of the loss. The verdict rides along in ``boxgym_*`` fields, which `trl_reward` reads.

Each call samples afresh. Its collection's identity (the run id) and its seeds (the
episodes' reset seeds and the sampling seeds) derive from the training run's
``train_id`` and ``seed``, the global step, the call's index among this hook's calls at
that step (TRL calls again at one step when ``steps_per_generation`` is below
``gradient_accumulation_steps``, or when a small task set comes round again) and the
process's rank (each DDP rank holds its own hook and TRL gives it part of a group): no
call gets another's stored episodes back and no two members of a group are copies. A
trainer restarted after a crash (same ``train_id``, store and seed) replays its calls
in order, so the k-th call at step s on rank r resumes the run the crashed one started:
the episodes it had committed (sampled from the same step's weights) are reused, the
rest sampled. A fresh ``train_id`` samples everything anew.

An ``infra_error`` episode is never a reward of 0: its reward is None (TRL leaves it
out of its group's mean and gives it no advantage) and its ``env_mask`` is all 0 (none
of its tokens is in the loss). A batch whose every episode is an infra error raises
`InfraError`. A flagged episode gets 0; the reward is the visible checks' by default
(``reward="visible"``, as ``gym train grpo``).
"""

from __future__ import annotations

import hashlib
import importlib
import threading
import uuid
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from gym._core._errors import ConfigError, InfraError
from gym._envs._splits import training_tasks
from gym._policy import LocalPolicy, Policy
from gym._policy._local import LocalModel
from gym._store import Store
from gym.train._grpo_collect import RewardSource, ScoredEpisode, collect, train_tasks
from gym.train._samples import episode_samples

__all__ = ["TrlRolloutStep", "TrlRollout", "trl_fields", "trl_reward", "trl_rollout"]

POLICY = "trl"
"""The policy name of the episodes a TRL trainer's model produced."""


class TrlRolloutStep(BaseModel):
    """What one call of the rollout hook ran."""

    policy_version: int
    """The trainer's ``global_step`` when it sampled."""
    call: int = 0
    """The call's index among this hook's calls at that global step (from 0)."""
    rank: int = 0
    """The process that made it (the accelerator's ``process_index``; 0 alone)."""
    run_id: str
    """The store's run holding the episodes."""
    episodes: int
    """Episodes returned to TRL."""
    infra_errors: int = 0
    """Of those, infra errors (left out of the loss)."""
    mean_reward: float = 0.0
    """Mean training reward over the others."""
    seconds: float = 0.0
    """Wall-clock seconds of the collection."""


class TrlRollout:
    """A rollout hook for TRL's GRPOTrainer that runs boxgym episodes (docs/training.md, TRL).

    Args:
        env_id: the environment; its training-split tasks are the dataset.
        tasks: only these train-split tasks (a held-out one raises `HeldOutError`).
        store: where the episodes are committed (a `Store` or a database URL); None:
            ``GYM_DB_URL`` or ``trajectories/runs.db``.
        reward: ``visible`` (the visible checks) or ``verdict`` (the verdict's reward).
        max_new_tokens: the most tokens one turn may generate.
        seed: seeds the sampling and the episodes' reset seeds.
        concurrency: episodes at once.
        constrained: constrain decoding to a valid call of an offered tool; the tokens
            the grammar forced are then masked out of TRL's loss (see `trl_fields`).
        train_id: names the training run in every episode's ``policy_params``; the
            same id, store, seed, global step, call index at that step and rank give the
            same run (resumed, not rerun: a trainer restarted after a crash replays its
            calls). None: a fresh id.
    """

    def __init__(
        self,
        env_id: str,
        *,
        tasks: Sequence[str] | None = None,
        store: Store | str | None = None,
        reward: RewardSource = "visible",
        max_new_tokens: int = 96,
        seed: int = 0,
        concurrency: int = 4,
        constrained: bool = True,
        train_id: str | None = None,
    ) -> None:
        self.env_id = env_id
        self.task_ids = train_tasks([env_id], tasks)[env_id]
        wanted = set(self.task_ids)
        self.prompts = _prompt_index([t for t in training_tasks(env_id) if t.id in wanted])
        self.store = store if isinstance(store, Store) else Store(store)
        self.reward = reward
        self.max_new_tokens = max_new_tokens
        self.seed = seed
        self.concurrency = concurrency
        self.constrained = constrained
        self.train_id = train_id or uuid.uuid4().hex[:16]
        self.steps: list[TrlRolloutStep] = []
        self._loaded: LocalModel | None = None
        self._calls: dict[int, int] = {}  # global step -> calls at it that collected

    def dataset(self) -> Any:
        """The training dataset: one row per task, ``prompt`` and ``task_id`` (datasets)."""
        try:
            datasets = importlib.import_module("datasets")
            table = importlib.import_module("datasets.table")
        except ImportError as exc:
            raise ConfigError(
                "the TRL dataset needs the datasets package: pip install -e '.[trl]' "
                "(or scripts/trl-site.sh)"
            ) from exc
        by_id = {task: prompt for prompt, task in self.prompts.items()}
        columns = {"prompt": [by_id[t] for t in self.task_ids], "task_id": list(self.task_ids)}
        # an explicit fingerprint: datasets would hash the table with dill otherwise,
        # which fails with some pyarrow releases (and this dataset is never cached)
        data = table.InMemoryTable.from_pydict(columns)
        return datasets.Dataset(data, fingerprint=f"boxgym-{self.train_id}")

    def task_of(self, prompt: Any) -> str:
        """The task a dataset prompt belongs to (a string, or chat messages).

        Raises:
            ConfigError: no training task has that prompt.
        """
        text = _prompt_text(prompt)
        if text not in self.prompts:
            raise ConfigError(
                f"a prompt given to the rollout is not the prompt of any training task of "
                f"{self.env_id}: {text[:80]!r}; build the dataset with TrlRollout.dataset()"
            )
        return self.prompts[text]

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        """TRL's rollout hook: one episode per prompt, as token ids, masks and verdicts."""
        tasks = [self.task_of(p) for p in prompts]
        if not tasks:
            return trl_fields([], eos_token_id=0)
        loaded = self._model(trainer)
        version = int(trainer.state.global_step)
        call, rank = self._calls.get(version, 0), _rank(trainer)
        seed = _call_seed(self.seed, rank, call)
        model = loaded.model
        training = bool(model.training)
        model.eval()
        try:
            collected = collect(
                self.store,
                envs=[self.env_id],
                tasks=sorted(set(tasks)),
                group_size=max(Counter(tasks).values()),
                seed=seed,
                version=version,
                policy=POLICY,
                policy_params={**self._params(trainer), "call": call, "rank": rank},
                policy_factory=self._policy_factory(loaded, trainer, seed),
                reward=self.reward,
                concurrency=self.concurrency,
                label=f"trl {self.train_id} step {version} call {call} rank {rank}",
            )
        finally:
            model.train(training)
        # counted once collected: a call that raised and is made again resumes its run
        self._calls[version] = call + 1
        episodes = _assign(tasks, collected.episodes)
        eos = int(loaded.tokenizer.eos_token_id)
        fields = trl_fields(episodes, eos_token_id=eos, mask_forced=self.constrained)
        self.steps.append(
            _step(version, collected.run_id, episodes, collected.seconds, call=call, rank=rank)
        )
        if all(e.training_reward is None for e in episodes):
            raise InfraError(
                f"every episode of run {collected.run_id} ended in infra_error: nothing to "
                f"train on (gym report {collected.run_id} says why)"
            )
        return fields

    def _model(self, trainer: Any) -> LocalModel:
        """The trainer's model and tokenizer as a policy's `LocalModel` (kept per model)."""
        model = trainer.model
        accelerator = getattr(trainer, "accelerator", None)
        if accelerator is not None:
            model = accelerator.unwrap_model(model)
        if self._loaded is None or self._loaded.model is not model:
            name = str(getattr(model.config, "_name_or_path", "") or "trl-model")
            tokenizer = trainer.processing_class
            self._loaded = LocalModel(Path(name), model, tokenizer, 0.0, threading.Lock())
        return self._loaded

    def _settings(self, trainer: Any) -> dict[str, Any]:
        args = trainer.args
        return {
            "temperature": float(args.temperature),
            "top_p": float(getattr(args, "top_p", 1.0) or 1.0),
            "max_new_tokens": self.max_new_tokens,
            "seed": self.seed,
            "constrained": self.constrained,
        }

    def _params(self, trainer: Any) -> dict[str, Any]:
        assert self._loaded is not None
        return {
            **self._settings(trainer),
            "model": str(self._loaded.path),
            "train_id": self.train_id,
            "trainer": "trl",
        }

    def _policy_factory(self, loaded: LocalModel, trainer: Any, seed: int) -> Any:
        settings = {**self._settings(trainer), "seed": seed}

        def make() -> Policy:
            return LocalPolicy.of(loaded, threads=None, **settings)

        return make


def trl_rollout(env_id: str, **options: Any) -> TrlRollout:
    """A rollout hook for ``GRPOTrainer(rollout_func=...)`` over an environment's tasks.

    Args:
        env_id: the environment.
        **options: see `TrlRollout` (tasks, store, reward, max_new_tokens, seed...).
    """
    return TrlRollout(env_id, **options)


def trl_fields(
    episodes: Sequence[ScoredEpisode], *, eos_token_id: int, mask_forced: bool = False
) -> dict[str, list[Any]]:
    """The rollout hook's answer for these episodes, one item each, in order.

    Each episode is one sequence: ``prompt_ids`` (its first turn's prompt) and
    ``completion_ids`` (the sampled tokens of each turn, the environment's tokens between
    turns), with ``env_mask`` 1 on sampled tokens and 0 on the environment's, and
    ``logprobs`` (the sampler's, 0.0 on the environment's tokens). TRL takes a
    completion as one sequence, so where a turn's prompt does not extend what came
    before (the prefix property; see `episode_samples`), that turn and the later ones
    are left out (``boxgym_dropped_turns`` counts them). An infra_error episode, or one
    without a sampled token, becomes the end-of-turn token alone with ``env_mask`` 0.

    With ``mask_forced``, a sampled token of logprob 0 (probability 1 under the
    sampler's distribution: one the tool-call grammar forced) is masked out too: it was
    no choice of the policy, and boxgym's own loss (under the grammar's mask) gives it
    no gradient, while TRL's loss, which knows no grammar, would train it.

    Args:
        episodes: scored episodes (``collect``'s), in the prompts' order.
        eos_token_id: the tokenizer's end-of-turn token.
        mask_forced: leave the tokens the grammar forced out of the loss.
    """
    fields: dict[str, list[Any]] = defaultdict(list)
    for scored in episodes:
        prompt, completion, mask, logprobs, dropped = _sequence(scored, eos_token_id)
        if mask_forced:
            mask = [m if lp != 0.0 else 0 for m, lp in zip(mask, logprobs, strict=True)]
        fields["prompt_ids"].append(prompt)
        fields["completion_ids"].append(completion)
        fields["logprobs"].append(logprobs)
        fields["env_mask"].append(mask)
        fields["boxgym_reward"].append(scored.training_reward)
        fields["boxgym_outcome"].append(scored.episode.outcome)
        fields["boxgym_hidden_pass"].append(scored.hidden_pass)
        fields["boxgym_flags"].append(list(scored.episode.flags))
        fields["boxgym_episode_id"].append(scored.episode.episode_id)
        fields["boxgym_policy_version"].append(scored.policy_version)
        fields["boxgym_dropped_turns"].append(dropped)
    keys = ("prompt_ids", "completion_ids", "logprobs", "env_mask")
    return {key: fields[key] for key in keys} | dict(fields)


def trl_reward(
    completions: Sequence[Any],
    boxgym_reward: Sequence[float | None] | None = None,
    boxgym_outcome: Sequence[str] | None = None,
    boxgym_hidden_pass: Sequence[bool | None] | None = None,
    boxgym_dropped_turns: Sequence[int] | None = None,
    log_metric: Any = None,
    **_: Any,
) -> list[float | None]:
    """The reward function for TRL: each episode's boxgym reward, None for infra_error.

    TRL reads None as "no reward" (left out of its group's mean, no advantage). With
    TRL's ``log_metric`` it also logs ``boxgym/infra_error_rate``,
    ``boxgym/hidden_pass_rate`` and ``boxgym/dropped_turns``.

    Raises:
        ConfigError: the batch has no ``boxgym_reward`` field (the trainer's
            ``rollout_func`` is not a `TrlRollout`).
    """
    if boxgym_reward is None:
        raise ConfigError(
            "trl_reward reads the boxgym_reward field of gym.train.trl_rollout's answer: "
            "pass rollout_func=gym.train.trl_rollout(ENV) to the GRPOTrainer"
        )
    if len(boxgym_reward) != len(completions):
        raise ConfigError(f"{len(boxgym_reward)} boxgym rewards for {len(completions)} completions")
    if log_metric is not None and boxgym_reward:
        outcomes = list(boxgym_outcome or [])
        hidden = [h for h in boxgym_hidden_pass or [] if h is not None]
        log_metric("boxgym/infra_error_rate", _mean([o == "infra_error" for o in outcomes]))
        log_metric("boxgym/hidden_pass_rate", _mean(hidden))
        log_metric("boxgym/dropped_turns", float(sum(boxgym_dropped_turns or [])))
    return list(boxgym_reward)


# -- helpers ---------------------------------------------------------------------------


def _call_seed(seed: int, rank: int, call: int) -> int:
    """The seed of one call of the hook: the training seed, the rank and the call's index.

    The collection's reset seeds and the policy's sampling seeds derive from it (with
    the global step), so calls at one step and ranks sharing a group sample apart. The
    first call of rank 0 keeps the training seed (one process calling once per step
    samples as it did before calls were counted).
    """
    if rank == 0 and call == 0:
        return seed
    digest = hashlib.sha256(f"trl:{seed}:{rank}:{call}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _rank(trainer: Any) -> int:
    """The trainer's process index (its accelerator's, else its args'); 0 when it has none."""
    for owner, name in (
        (getattr(trainer, "accelerator", None), "process_index"),
        (getattr(trainer, "args", None), "process_index"),
    ):
        value = getattr(owner, name, None) if owner is not None else None
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0


def _prompt_text(prompt: Any) -> str:
    """A dataset prompt's text: the string, or the last user message of chat messages."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        users = [m for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        if users and isinstance(users[-1].get("content"), str):
            return str(users[-1]["content"])
    raise ConfigError(f"a rollout prompt must be a string or chat messages, not {prompt!r:.80}")


def _prompt_index(tasks: Sequence[Any]) -> dict[str, str]:
    """Prompt text -> task id.

    Raises:
        ConfigError: two tasks share a prompt (TRL's hook sees prompts only).
    """
    index: dict[str, str] = {}
    for task in tasks:
        if task.prompt in index:
            raise ConfigError(
                f"tasks {index[task.prompt]} and {task.id} have the same prompt, and TRL's "
                "rollout hook receives only prompts: pass tasks= naming one of them"
            )
        index[task.prompt] = task.id
    return index


def _assign(tasks: Sequence[str], episodes: Sequence[ScoredEpisode]) -> list[ScoredEpisode]:
    """One collected episode per prompt position, each task's episodes in turn."""
    pools: dict[str, list[ScoredEpisode]] = defaultdict(list)
    for episode in episodes:
        pools[episode.task_id].append(episode)
    out = []
    for task in tasks:
        if not pools[task]:
            raise InfraError(f"the run has fewer episodes of task {task} than prompts asked")
        out.append(pools[task].pop(0))
    return out


def _sequence(
    scored: ScoredEpisode, eos: int
) -> tuple[list[int], list[int], list[int], list[float], int]:
    """(prompt ids, completion ids, env mask, logprobs, turns dropped) of one episode."""
    turns = scored.episode.turns
    if scored.training_reward is None or not turns:
        return [eos], [eos], [0], [0.0], len(turns)
    built = episode_samples(turns, eos_token_id=eos)
    first = built.samples[0]
    start = len(turns[0].prompt)
    completion = first.input_ids[start:]
    if not completion:  # nothing sampled (a turn of zero tokens)
        return list(turns[0].prompt), [eos], [0], [0.0], len(turns) - len(first.turns)
    return (
        first.input_ids[:start],
        completion,
        first.loss_mask[start:],
        first.rollout_logprobs[start:],
        len(turns) - len(first.turns),
    )


def _step(
    version: int,
    run_id: str,
    episodes: Sequence[ScoredEpisode],
    seconds: float,
    *,
    call: int = 0,
    rank: int = 0,
) -> TrlRolloutStep:
    rewards = [e.training_reward for e in episodes if e.training_reward is not None]
    return TrlRolloutStep(
        policy_version=version,
        call=call,
        rank=rank,
        run_id=run_id,
        episodes=len(episodes),
        infra_errors=len(episodes) - len(rewards),
        mean_reward=_mean(rewards),
        seconds=seconds,
    )


def _mean(values: Sequence[float | bool]) -> float:
    return float(sum(values)) / len(values) if values else 0.0
