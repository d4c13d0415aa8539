"""The GRPO policy loss and the supervised loss, over masked token batches (plain torch).

Per sampled token t of sequence i, with advantage A_i, the trainer's log-probability
``logp``, the log-probability of the policy that collected the batch as the trainer
computes it (``old``; ``logp`` detached when there is one update per batch, so the
ratio is exactly 1) and the sampler's (``rollout``, what the policy recorded)::

    ratio = exp(logp - old)
    pg    = -min(ratio * A, clip(ratio, 1 - eps_low, 1 + eps_high) * A) * w
    w     = min(exp(old - rollout), tis_cap)       truncated importance sampling, no grad
    kl    = exp(ref - logp) - (ref - logp) - 1     k3 estimator, only when beta > 0
    loss_t = pg + beta * kl

and the token losses are aggregated over the loss mask:

- ``token_mean``: the sum over every sampled token of the batch / their count (DAPO);
- ``seq_mean_token_mean``: each sequence's token mean, averaged over sequences
  (the original GRPO);
- ``seq_sum_const``: the sum / (sequences x a constant length) (Dr. GRPO).

With gradient accumulation, pass the whole step's token or sequence count as
``normalizer`` so that every micro-batch divides by the same number.

The supervised loss (rejection-sampling fine-tuning) is the negative log-likelihood of
the sampled tokens aggregated the same way: the same masks, the same path.

torch is imported inside these functions; the module itself imports without it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, model_validator

from gym._core._errors import ConfigError

if TYPE_CHECKING:
    import torch

__all__ = ["Aggregation", "LossConfig", "LossMetrics", "aggregate", "policy_loss", "sft_loss"]

Aggregation = Literal["token_mean", "seq_mean_token_mean", "seq_sum_const"]
"""How token losses become one number."""


class LossConfig(BaseModel):
    """Settings of the policy loss (the defaults follow research/rl-frameworks.md §8)."""

    aggregation: Aggregation = "token_mean"
    """token_mean, seq_mean_token_mean or seq_sum_const."""
    eps_low: float = Field(default=0.2, ge=0)
    """Lower clip range: the ratio is clipped at 1 - eps_low."""
    eps_high: float = Field(default=0.28, ge=0)
    """Upper clip range (clip-higher): the ratio is clipped at 1 + eps_high."""
    beta: float = Field(default=0.0, ge=0)
    """Weight of the k3 KL to a frozen reference; 0 (the default) needs no reference."""
    tis_cap: float | None = Field(default=2.0, gt=0)
    """Cap of the truncated importance weight exp(old - rollout); None turns it off."""
    norm_length: int | None = Field(default=None, gt=0)
    """seq_sum_const's constant length (e.g. the generation budget); None: the batch's
    padded width."""

    @model_validator(mode="after")
    def _clip_below_one(self) -> LossConfig:
        if self.eps_low >= 1:
            raise ValueError("eps_low must be below 1 (the ratio is clipped at 1 - eps_low)")
        return self


class LossMetrics(BaseModel):
    """What one loss computation measured (plain floats, for logs and the store)."""

    loss: float
    """The loss that was returned."""
    pg_loss: float
    """Its policy-gradient part (equal to ``loss`` when beta is 0)."""
    kl: float = 0.0
    """Mean k3 KL to the reference over sampled tokens (0 without a reference)."""
    clip_fraction: float = 0.0
    """Sampled tokens whose clipped term was the smaller one (low or high)."""
    clip_low_fraction: float = 0.0
    """... clipped because ratio < 1 - eps_low with a negative advantage."""
    clip_high_fraction: float = 0.0
    """... clipped because ratio > 1 + eps_high with a positive advantage."""
    ratio_mean: float = 1.0
    """Mean ratio exp(logp - old) over sampled tokens."""
    tis_weight_mean: float = 1.0
    """Mean truncated importance weight over sampled tokens."""
    tis_capped_fraction: float = 0.0
    """Sampled tokens whose importance weight hit the cap."""
    tokens: int = 0
    """Sampled tokens (the loss mask's sum)."""
    sequences: int = 0
    """Sequences in the batch."""
    zero_variance_fraction: float = 0.0
    """Groups dropped for zero reward variance over all groups (set by the caller)."""


def _torch() -> Any:
    try:
        return importlib.import_module("torch")
    except ImportError as exc:
        raise ConfigError("training needs torch: pip install -e '.[train]'") from exc


def aggregate(
    values: torch.Tensor,
    mask: torch.Tensor,
    aggregation: Aggregation = "token_mean",
    *,
    norm_length: int | None = None,
    normalizer: float | None = None,
) -> torch.Tensor:
    """One number from per-token values [B, T] over a 0/1 mask [B, T].

    Args:
        values: per-token losses.
        mask: 1 where a token counts (the loss mask).
        aggregation: token_mean, seq_mean_token_mean or seq_sum_const.
        norm_length: seq_sum_const's constant length (None: T).
        normalizer: divide by this instead of the batch's own count: the step's token
            count (token_mean), sequence count (seq_mean_token_mean) or
            sequences x length (seq_sum_const), for gradient accumulation.
    """
    keep = mask.bool()
    values = values.masked_fill(~keep, 0.0)  # not values * mask: inf * 0 is nan
    mask = keep.to(values.dtype)
    total = values.sum()
    if aggregation == "token_mean":
        return total / (normalizer if normalizer is not None else mask.sum().clamp(min=1))
    if aggregation == "seq_mean_token_mean":
        per_seq = values.sum(-1) / mask.sum(-1).clamp(min=1)
        return per_seq.sum() / (normalizer if normalizer is not None else values.shape[0])
    if aggregation == "seq_sum_const":
        length = norm_length if norm_length is not None else values.shape[-1]
        return total / (normalizer if normalizer is not None else values.shape[0] * length)
    raise ConfigError(
        f"unknown aggregation {aggregation!r}: token_mean, seq_mean_token_mean or seq_sum_const"
    )


@dataclass
class _Terms:
    """Per-token pieces of the policy loss."""

    pg: torch.Tensor
    ratio: torch.Tensor
    weight: torch.Tensor
    clip_low: torch.Tensor
    clip_high: torch.Tensor
    capped: torch.Tensor


def _terms(
    logprobs: torch.Tensor,
    old: torch.Tensor,
    rollout: torch.Tensor,
    adv: torch.Tensor,
    config: LossConfig,
) -> _Terms:
    torch = _torch()
    ratio = torch.exp(logprobs - old)
    clipped = ratio.clamp(1 - config.eps_low, 1 + config.eps_high)
    pg = -torch.minimum(ratio * adv, clipped * adv)
    raw = torch.exp(old - rollout).detach()
    cap = config.tis_cap
    weight = raw.clamp(max=cap) if cap is not None else torch.ones_like(raw)
    return _Terms(
        pg=pg * weight,
        ratio=ratio,
        weight=weight,
        clip_low=(ratio < 1 - config.eps_low) & (adv < 0),
        clip_high=(ratio > 1 + config.eps_high) & (adv > 0),
        capped=raw > cap if cap is not None else torch.zeros_like(raw, dtype=torch.bool),
    )


def _masked_mean(values: torch.Tensor, mask: torch.Tensor) -> float:
    keep = mask.bool()
    count = int(keep.sum())
    return float(values.double()[keep].sum()) / count if count else 0.0


def policy_loss(
    logprobs: torch.Tensor,
    rollout_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    loss_mask: torch.Tensor,
    config: LossConfig | None = None,
    *,
    old_logprobs: torch.Tensor | None = None,
    ref_logprobs: torch.Tensor | None = None,
    normalizer: float | None = None,
) -> tuple[torch.Tensor, LossMetrics]:
    """The clipped, importance-corrected GRPO loss of a batch, and its metrics.

    Args:
        logprobs: the trainer's log-probabilities of the batch's tokens [B, T] (with
            grad).
        rollout_logprobs: the sampler's, as the policy recorded them [B, T].
        advantages: one per sequence [B] (or per token [B, T]).
        loss_mask: 1 on sampled tokens [B, T].
        config: loss settings (defaults when None).
        old_logprobs: the trainer's log-probabilities under the policy that collected
            the batch [B, T]; None means this is the one update per batch (``logprobs``
            detached, ratio 1).
        ref_logprobs: the frozen reference's [B, T]; needed when ``config.beta > 0``.
        normalizer: see `aggregate` (gradient accumulation).

    Raises:
        ConfigError: beta > 0 without reference logprobs, or shapes that disagree.
    """
    config = config or LossConfig()
    _check_shapes(logprobs, rollout_logprobs, loss_mask, old_logprobs, ref_logprobs)
    old = (old_logprobs if old_logprobs is not None else logprobs).detach()
    adv = advantages if advantages.dim() == 2 else advantages[:, None]
    adv = adv.to(logprobs.dtype).expand_as(logprobs)
    terms = _terms(logprobs, old, rollout_logprobs.to(logprobs.dtype), adv, config)
    per_token, kl = terms.pg, None
    if config.beta > 0:
        if ref_logprobs is None:
            raise ConfigError("beta > 0 needs the reference model's logprobs (ref_logprobs)")
        delta = ref_logprobs.detach().to(logprobs.dtype) - logprobs
        kl = _torch().exp(delta) - delta - 1
        per_token = per_token + config.beta * kl

    def total(values: torch.Tensor) -> torch.Tensor:
        return aggregate(
            values,
            loss_mask,
            config.aggregation,
            norm_length=config.norm_length,
            normalizer=normalizer,
        )

    loss, pg_loss = total(per_token), total(terms.pg)
    return loss, _metrics(loss, pg_loss, kl, terms, loss_mask)


def _check_shapes(*tensors: torch.Tensor | None) -> None:
    shapes = {tuple(t.shape) for t in tensors if t is not None}
    if len(shapes) != 1:
        raise ConfigError(f"logprobs, masks and references must share one shape, got {shapes}")


def _metrics(
    loss: torch.Tensor,
    pg_loss: torch.Tensor,
    kl: torch.Tensor | None,
    terms: _Terms,
    mask: torch.Tensor,
) -> LossMetrics:
    low, high = _masked_mean(terms.clip_low, mask), _masked_mean(terms.clip_high, mask)
    return LossMetrics(
        loss=float(loss.detach()),
        pg_loss=float(pg_loss.detach()),
        kl=_masked_mean(kl.detach(), mask) if kl is not None else 0.0,
        clip_fraction=low + high,
        clip_low_fraction=low,
        clip_high_fraction=high,
        ratio_mean=_masked_mean(terms.ratio.detach(), mask),
        tis_weight_mean=_masked_mean(terms.weight, mask),
        tis_capped_fraction=_masked_mean(terms.capped, mask),
        tokens=int(mask.sum()),
        sequences=int(mask.shape[0]),
    )


def sft_loss(
    logprobs: torch.Tensor,
    loss_mask: torch.Tensor,
    aggregation: Aggregation = "token_mean",
    *,
    weights: torch.Tensor | None = None,
    norm_length: int | None = None,
    normalizer: float | None = None,
) -> tuple[torch.Tensor, LossMetrics]:
    """The supervised loss: negative log-likelihood of the sampled tokens.

    Rejection-sampling fine-tuning is this loss over the kept episodes; it equals the
    policy gradient with advantage 1 for kept and 0 for rejected episodes.

    Args:
        logprobs: the trainer's log-probabilities [B, T] (with grad).
        loss_mask: 1 on the tokens to learn [B, T].
        aggregation: as for `aggregate`.
        weights: per-sequence weights [B] (1 when None).
        norm_length: see `aggregate`.
        normalizer: see `aggregate`.
    """
    _check_shapes(logprobs, loss_mask)
    nll = -logprobs
    if weights is not None:
        nll = nll * weights.to(logprobs.dtype)[:, None]
    loss = aggregate(nll, loss_mask, aggregation, norm_length=norm_length, normalizer=normalizer)
    value = float(loss.detach())
    return loss, LossMetrics(
        loss=value, pg_loss=value, tokens=int(loss_mask.sum()), sequences=int(loss_mask.shape[0])
    )
