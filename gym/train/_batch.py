"""Padded tensors from samples, the trainer's log-probabilities, and one batch's loss.

The attention mask comes from each sample's length, never from comparing ids with the
pad id (a pad id may equal the end-of-turn id); the loss mask is the samples' own
(1 only on sampled tokens). torch is imported inside these functions.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gym._errors import ConfigError
from gym.train._loss import LossConfig, LossMetrics, policy_loss, sft_loss
from gym.train._samples import Sample

if TYPE_CHECKING:
    import torch

__all__ = ["Batch", "batch_loss", "batch_sft_loss", "collate", "token_logprobs"]


@dataclass
class Batch:
    """Samples as right-padded tensors, all [B, T] except ``advantages`` [B]."""

    input_ids: torch.Tensor
    """Token ids (pad id past each sample's end)."""
    attention_mask: torch.Tensor
    """1 on each sample's tokens, 0 on padding."""
    loss_mask: torch.Tensor
    """1 on sampled tokens only."""
    rollout_logprobs: torch.Tensor
    """The sampler's log-probabilities at sampled tokens, 0 elsewhere."""
    advantages: torch.Tensor
    """One per sample."""

    @property
    def tokens(self) -> int:
        """Sampled tokens in the batch."""
        return int(self.loss_mask.sum())


def collate(samples: Sequence[Sample], pad_token_id: int) -> Batch:
    """Right-pad samples into one batch.

    Args:
        samples: the samples (each with its advantage set).
        pad_token_id: the id written past each sample's end (masked out everywhere).
    """
    if not samples:
        raise ConfigError("cannot collate an empty list of samples")
    torch = importlib.import_module("torch")
    width = max(len(s.input_ids) for s in samples)

    def pad(values: list[Any], fill: Any) -> list[Any]:
        return values + [fill] * (width - len(values))

    return Batch(
        input_ids=torch.tensor([pad(s.input_ids, pad_token_id) for s in samples]),
        attention_mask=torch.tensor([pad([1] * len(s.input_ids), 0) for s in samples]),
        loss_mask=torch.tensor([pad(s.loss_mask, 0) for s in samples]),
        rollout_logprobs=torch.tensor(
            [pad(s.rollout_logprobs, 0.0) for s in samples], dtype=torch.float32
        ),
        advantages=torch.tensor([s.advantage for s in samples], dtype=torch.float32),
    )


def token_logprobs(
    model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, *, temperature: float = 1.0
) -> torch.Tensor:
    """Each token's log-probability given the tokens before it, [B, T] (column 0 is 0).

    Args:
        model: a causal LM returning ``.logits`` [B, T, V].
        input_ids: token ids [B, T].
        attention_mask: 1 on real tokens [B, T].
        temperature: divide the logits by this first: the sampling temperature, so
            that the ratio to the rollout logprobs compares like with like.
    """
    th = importlib.import_module("torch")
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1].float()
    if temperature != 1.0:
        logits = logits / temperature
    picked = th.log_softmax(logits, -1).gather(-1, input_ids[:, 1:, None])[..., 0]
    aligned: torch.Tensor = th.cat([th.zeros_like(picked[:, :1]), picked], dim=1)
    return aligned


def batch_loss(
    model: Any,
    batch: Batch,
    config: LossConfig | None = None,
    *,
    reference: Callable[[], Any] | None = None,
    old_logprobs: torch.Tensor | None = None,
    temperature: float = 1.0,
    normalizer: float | None = None,
) -> tuple[torch.Tensor, LossMetrics]:
    """The GRPO loss of one batch under a model (call ``backward`` on the first value).

    Args:
        model: the policy being trained.
        batch: from `collate`.
        config: loss settings.
        reference: returns the frozen reference model; called only when
            ``config.beta > 0`` (so it is loaded only when used).
        old_logprobs: see `policy_loss` (None: one update per batch).
        temperature: the sampling temperature (see `token_logprobs`).
        normalizer: see `aggregate`.
    """
    config = config or LossConfig()
    logprobs = token_logprobs(model, batch.input_ids, batch.attention_mask, temperature=temperature)
    ref = None
    if config.beta > 0:
        if reference is None:
            raise ConfigError("beta > 0 needs a reference model: pass reference=")
        torch = importlib.import_module("torch")
        with torch.no_grad():
            ref = token_logprobs(
                reference(), batch.input_ids, batch.attention_mask, temperature=temperature
            )
    return policy_loss(
        logprobs,
        batch.rollout_logprobs,
        batch.advantages,
        batch.loss_mask,
        config,
        old_logprobs=old_logprobs,
        ref_logprobs=ref,
        normalizer=normalizer,
    )


def batch_sft_loss(
    model: Any, batch: Batch, config: LossConfig | None = None, *, normalizer: float | None = None
) -> tuple[torch.Tensor, LossMetrics]:
    """The supervised loss of one batch (its advantages used as per-sample weights).

    Args:
        model: the policy being fine-tuned.
        batch: from `collate` (advantage 1.0 for each kept sample).
        config: its aggregation and norm_length are used.
        normalizer: see `aggregate`.
    """
    config = config or LossConfig()
    logprobs = token_logprobs(model, batch.input_ids, batch.attention_mask)
    return sft_loss(
        logprobs,
        batch.loss_mask,
        config.aggregation,
        weights=batch.advantages,
        norm_length=config.norm_length,
        normalizer=normalizer,
    )
