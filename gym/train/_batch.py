"""Padded tensors from samples, the trainer's log-probabilities, and one batch's loss.

The attention mask comes from each sample's length, never from comparing ids with the
pad id (a pad id may equal the end-of-turn id); the loss mask is the samples' own
(1 only on sampled tokens). The losses ask for the log-probabilities of the sampled
tokens only (`token_logprobs`'s ``needed``): the output head, the grammar mask and the
softmax run on the completion columns, not on the prompt that fills most of a batch.
torch is imported inside these functions.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gym._core._errors import ConfigError
from gym.train._loss import LossConfig, LossMetrics, policy_loss, sft_loss
from gym.train._samples import Sample

if TYPE_CHECKING:
    import torch

__all__ = [
    "Batch",
    "batch_loss",
    "batch_loss_logprobs",
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
    needed: torch.Tensor | None = None,
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
        needed: [B, T] 0/1, the tokens whose log-probability is wanted (a loss mask).
            The output head, the grammar mask and the softmax then run only on the
            columns some row needs (in a GRPO batch most columns are prompt), and every
            other column is 0; the needed values are those computed without it.
    """
    th = importlib.import_module("torch")
    cols = None
    if needed is not None:
        # logits at column j predict the token at j + 1
        cols = needed[:, 1:].bool().any(0).nonzero()[:, 0]
        if cols.numel() == 0:
            cols = None  # nothing needed: the full path keeps the result tied to the model
    if cols is None:
        logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1]
        targets, rows = input_ids[:, 1:], None if allowed is None else allowed[:, 1:]
    else:
        logits = _logits_at(model, input_ids, attention_mask, cols)
        targets, rows = input_ids[:, cols + 1], None if allowed is None else allowed[:, cols + 1]
    logits = logits.float()
    if temperature != 1.0:
        logits = logits / temperature
    if rows is not None:
        logits = logits.masked_fill(~rows[..., : logits.shape[-1]], float("-inf"))
    picked = th.log_softmax(logits, -1).gather(-1, targets[..., None])[..., 0]
    if cols is not None:
        out: torch.Tensor = th.zeros(input_ids.shape, dtype=picked.dtype)
        return out.index_copy(1, cols + 1, picked)
    aligned: torch.Tensor = th.cat([th.zeros_like(picked[:, :1]), picked], dim=1)
    return aligned


def _logits_at(
    model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, cols: torch.Tensor
) -> torch.Tensor:
    """The logits at the columns ``cols`` only, [B, len(cols), V].

    A transformers causal LM that takes ``logits_to_keep`` (Llama, SmolLM2 and most
    others) applies its output head to those columns only; any other model computes
    every column's logits and the columns are picked from them.
    """
    if "logits_to_keep" in _forward_parameters(model):
        kept = model(input_ids=input_ids, attention_mask=attention_mask, logits_to_keep=cols)
        return kept.logits  # type: ignore[no-any-return]
    full = model(input_ids=input_ids, attention_mask=attention_mask).logits
    return full[:, cols]  # type: ignore[no-any-return]


def _forward_parameters(model: Any) -> Any:
    try:
        return inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return {}


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
    loss, metrics, _ = batch_loss_logprobs(
        model,
        batch,
        config,
        reference=reference,
        old_logprobs=old_logprobs,
        temperature=temperature,
        normalizer=normalizer,
    )
    return loss, metrics


def batch_loss_logprobs(
    model: Any,
    batch: Batch,
    config: LossConfig | None = None,
    *,
    reference: Callable[[], Any] | None = None,
    old_logprobs: torch.Tensor | None = None,
    temperature: float = 1.0,
    normalizer: float | None = None,
) -> tuple[torch.Tensor, LossMetrics, torch.Tensor]:
    """`batch_loss`, and the model's log-probabilities it was computed from.

    The third value is [B, T] with grad, 0 on the columns no sampled token needs (see
    `token_logprobs`'s ``needed``): a trainer keeps it, detached, as the log-probabilities
    before its first optimizer step.
    """
    config = config or LossConfig()
    logprobs = token_logprobs(
        model,
        batch.input_ids,
        batch.attention_mask,
        temperature=temperature,
        allowed=batch.allowed,
        needed=batch.loss_mask,
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
                needed=batch.loss_mask,
            )
    loss, metrics = policy_loss(
        logprobs,
        batch.rollout_logprobs,
        batch.advantages,
        batch.loss_mask,
        config,
        old_logprobs=old_logprobs,
        ref_logprobs=ref,
        normalizer=normalizer,
    )
    return loss, metrics, logprobs


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
    logprobs = token_logprobs(
        model,
        batch.input_ids,
        batch.attention_mask,
        allowed=batch.allowed,
        needed=batch.loss_mask,
    )
    return sft_loss(
        logprobs,
        batch.loss_mask,
        config.aggregation,
        weights=batch.advantages,
        norm_length=config.norm_length,
        normalizer=normalizer,
    )
