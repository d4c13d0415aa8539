"""Training on environment rewards: token batches from episodes and the GRPO loss.

For people who write a training loop over boxgym episodes (``gym train`` builds on it).
The pieces, each small and typed:

1. Episodes: `TrainEpisode.from_result` (an `EpisodeResult` in memory) or
   `TrainEpisode.from_store` (a stored episode): outcome, reward, flags and the exact
   token ids and logprobs the policy recorded.
2. Rewards and advantages: `training_reward` (infra_error -> None, left out; flagged ->
   0), `advantages` over groups (``grpo``, ``dr_grpo``, ``rloo``), zero-variance groups
   dropped and counted.
3. Samples, token-in/token-out: `episode_samples` joins a turn's prompt, the sampled
   ids and the environment's tokens without re-tokenizing, splitting where the prefix
   property breaks; `grpo_samples` does 2 and 3 for a batch of episodes.
4. Tensors: `collate` (attention mask from lengths, loss mask 1 only on sampled
   tokens), `token_logprobs` (the trainer's logprobs).
5. Losses: `policy_loss` (clip-higher, truncated importance sampling against the
   rollout logprobs, optional k3 KL), `sft_loss` (rejection-sampling fine-tuning),
   `aggregate` (``token_mean``, ``seq_mean_token_mean``, ``seq_sum_const``), and
   `batch_loss` / `batch_sft_loss` over a model; metrics as `LossMetrics`.
6. Rejection-sampling fine-tuning (``gym train rft``): `train_rft` runs rounds of
   collect (the runner and store), `select_episodes` (verified, distinct, capped per
   task), fine-tune with `batch_sft_loss`, evaluate on the eval split and `promote`
   only on a rise of held-out pass@1.

7. Other trainers' adapters (each imports its trainer, so import it where that is
   installed; docs/training.md has the recipes): ``gym.train._verl.BoxgymAgentLoop``
   (verl's agent loop ``boxgym_agent``) and ``gym.train._skyrl.BoxgymTextEnv``
   (skyrl-gym's ``boxgym`` environment), one boxgym episode per trajectory, rewarded
   with the verdict's reward; an ``infra_error`` episode raises `InfraError`.

8. Step-level sampling (``gym train grpo --sampling step``): `StepConfig` (K branches,
   the turns to fork at, an optional dense `StepReward` and its weight), `step_samples`
   (advantages per fork, one sample per branch: its branching turn alone), `Branch`.

9. TRL: `trl_rollout` is a rollout hook for TRL's ``GRPOTrainer(rollout_func=...)``
   (boxgym runs each prompt's episode in a container with the trainer's model and
   returns token ids, a loss mask over tool results and the verdict), `trl_reward` its
   reward function (None for infra_error: TRL leaves it out), `trl_fields` the answer
   it assembles (docs/training.md, "TRL").

Which tasks may be trained on at all: `training_tasks` keeps a family's training
splits, `refuse_held_out` raises `HeldOutError` for a held-out one, `split_use` names
what a split may be used for (``training`` or ``held-out``), and
``gym.train._episodes.refuse_held_out_episodes`` raises it for episodes of a held-out
split (each `TrainEpisode` names its ``env_id``): every entry that collects, reads or
samples training episodes calls it.

torch is imported only inside the functions that use it, so ``import gym.train`` is
light; install it with ``pip install -e '.[train]'``.
"""

from gym._core._renamed import renamed
from gym._envs._splits import refuse_held_out, split_use, training_tasks
from gym.train._batch import (
    Batch,
    batch_loss,
    batch_sft_loss,
    collate,
    sample_allowed,
    token_logprobs,
)
from gym.train._episodes import GroupSamples, TrainEpisode, grpo_samples
from gym.train._loss import (
    Aggregation,
    LossConfig,
    LossMetrics,
    aggregate,
    policy_loss,
    sft_loss,
)
from gym.train._rewards import (
    AdvantageKind,
    Advantages,
    advantages,
    group_advantages,
    training_reward,
    verified,
)
from gym.train._rft import (
    RFTConfig,
    RFTResult,
    RoundResult,
    Selection,
    promote,
    select_episodes,
    train_rft,
)
from gym.train._samples import EpisodeSamples, Sample, TurnTokens, episode_samples, turn_tokens
from gym.train._steps import Branch, StepConfig, StepReward, step_samples
from gym.train._trl import TrlRollout, TrlRolloutStep, trl_fields, trl_reward, trl_rollout

__all__ = [
    "AdvantageKind",
    "Advantages",
    "Aggregation",
    "Batch",
    "Branch",
    "EpisodeSamples",
    "GroupSamples",
    "LossConfig",
    "LossMetrics",
    "RFTConfig",
    "RFTResult",
    "RoundResult",
    "Sample",
    "Selection",
    "StepConfig",
    "StepReward",
    "TrainEpisode",
    "TrlRollout",
    "TrlRolloutStep",
    "TurnTokens",
    "advantages",
    "aggregate",
    "batch_loss",
    "batch_sft_loss",
    "collate",
    "episode_samples",
    "group_advantages",
    "grpo_samples",
    "policy_loss",
    "promote",
    "refuse_held_out",
    "sample_allowed",
    "select_episodes",
    "sft_loss",
    "split_use",
    "step_samples",
    "token_logprobs",
    "train_rft",
    "training_reward",
    "training_tasks",
    "trl_fields",
    "trl_reward",
    "trl_rollout",
    "turn_tokens",
    "verified",
]

__getattr__ = renamed("gym.train", {"split_role": "split_use"}, globals())
