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

__all__ = [
    "Batch",
    "batch_loss",
    "batch_sft_loss",
    "collate",
    "sample_allowed",
    "token_logprobs",
]


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
    allowed: torch.Tensor | None = None
    """[B, T, V] booleans: the tokens a constrained sampler could choose at each position
    (None: unconstrained; see `sample_allowed`)."""

    @property
    def tokens(self) -> int:
        """Sampled tokens in the batch."""
        return int(self.loss_mask.sum())


def collate(
    samples: Sequence[Sample],
    pad_token_id: int,
    *,
    allowed: Sequence[torch.Tensor] | None = None,
) -> Batch:
    """Right-pad samples into one batch.

    Args:
        samples: the samples (each with its advantage set).
        pad_token_id: the id written past each sample's end (masked out everywhere).
        allowed: per sample, its `sample_allowed` tensor (for constrained rollouts).
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
        allowed=_pad_allowed(allowed, width) if allowed is not None else None,
    )


def _pad_allowed(allowed: Sequence[torch.Tensor], width: int) -> torch.Tensor:
    th = importlib.import_module("torch")
    vocab = allowed[0].shape[-1]
    out: torch.Tensor = th.ones(len(allowed), width, vocab, dtype=th.bool)
    for i, rows in enumerate(allowed):
        out[i, : rows.shape[0]] = rows
    return out


def sample_allowed(sample: Sample, per_turn: Sequence[torch.Tensor], vocab: int) -> torch.Tensor:
    """A sample's [len(input_ids), V] allowed-token rows from its turns' grammar masks.

    Args:
        sample: the sample.
        per_turn: for each of its turns in order, the rows `allowed_tokens` gave for that
            turn's completion ([len(completion), V]).
        vocab: the logits' width.

    Raises:
        ConfigError: the rows do not cover the sample's sampled tokens one to one.
    """
    th = importlib.import_module("torch")
    rows = th.cat([r[:, :vocab] for r in per_turn]) if per_turn else None
    sampled = th.tensor(sample.loss_mask, dtype=th.bool)
    if rows is None or rows.shape[0] != int(sampled.sum()):
        got = 0 if rows is None else rows.shape[0]
        raise ConfigError(f"{got} mask rows for {int(sampled.sum())} sampled tokens")
    out: torch.Tensor = th.ones(len(sample.input_ids), vocab, dtype=th.bool)
    out[sampled] = rows
    return out


def token_logprobs(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    *,
    temperature: float = 1.0,
    allowed: torch.Tensor | None = None,
) -> torch.Tensor:
    """Each token's log-probability given the tokens before it, [B, T] (column 0 is 0).

    Args:
        model: a causal LM returning ``.logits`` [B, T, V].
        input_ids: token ids [B, T].
        attention_mask: 1 on real tokens [B, T].
        temperature: divide the logits by this first: the sampling temperature, so
            that the ratio to the rollout logprobs compares like with like.
        allowed: [B, T, V] booleans, the tokens a constrained sampler could choose at
            each position (all True where it was not constrained; see
            `gym._policy._grammar.allowed_tokens`): the log-probabilities are then those
            of the masked distribution the rollout logprobs were recorded under.
    """
    th = importlib.import_module("torch")
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1].float()
    if temperature != 1.0:
        logits = logits / temperature
    if allowed is not None:
        width = logits.shape[-1]
        logits = logits.masked_fill(~allowed[:, 1:, :width], float("-inf"))
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
    logprobs = token_logprobs(
        model,
        batch.input_ids,
        batch.attention_mask,
        temperature=temperature,
        allowed=batch.allowed,
    )
    ref = None
    if config.beta > 0:
        if reference is None:
            raise ConfigError("beta > 0 needs a reference model: pass reference=")
        torch = importlib.import_module("torch")
        with torch.no_grad():
            ref = token_logprobs(
                reference(),
                batch.input_ids,
                batch.attention_mask,
                temperature=temperature,
                allowed=batch.allowed,
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
    logprobs = token_logprobs(model, batch.input_ids, batch.attention_mask, allowed=batch.allowed)
    return sft_loss(
        logprobs,
        batch.loss_mask,
        config.aggregation,
        weights=batch.advantages,
        norm_length=config.norm_length,
        normalizer=normalizer,
    )
