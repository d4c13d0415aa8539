"""GRPO and SFT losses: golden values from hand computations and an independent numpy version."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gym
from gym.train import LossConfig, aggregate, policy_loss, sft_loss

torch = pytest.importorskip("torch")


# -- an independent numpy implementation ---------------------------------------------------


def np_aggregate(values, mask, kind, norm_length=None):
    v, m = np.where(mask > 0, values, 0.0), mask.astype(np.float64)
    if kind == "token_mean":
        return v.sum() / m.sum()
    if kind == "seq_mean_token_mean":
        return np.mean([v[i].sum() / m[i].sum() for i in range(len(v))])
    length = norm_length if norm_length is not None else values.shape[1]
    return v.sum() / (values.shape[0] * length)


def np_policy_loss(logp, old, rollout, adv, mask, cfg: LossConfig, ref=None):
    out = np.zeros_like(logp)
    for i in range(logp.shape[0]):
        for t in range(logp.shape[1]):
            ratio = math.exp(logp[i, t] - old[i, t])
            a = adv[i]
            low, high = 1 - cfg.eps_low, 1 + cfg.eps_high
            pg = -min(ratio * a, min(max(ratio, low), high) * a)
            w = math.exp(old[i, t] - rollout[i, t])
            if cfg.tis_cap is not None:
                w = min(w, cfg.tis_cap)
            else:
                w = 1.0
            out[i, t] = pg * w
            if cfg.beta > 0:
                d = ref[i, t] - logp[i, t]
                out[i, t] += cfg.beta * (math.exp(d) - d - 1)
    return np_aggregate(out, mask, cfg.aggregation, cfg.norm_length)


def batch(seed=0, b=3, t=6):
    rng = np.random.default_rng(seed)
    logp = -rng.uniform(0.05, 3.0, size=(b, t))
    old = logp + rng.normal(0, 0.4, size=(b, t))  # ratios on both sides of the clip range
    rollout = old + rng.normal(0, 0.8, size=(b, t))
    ref = logp + rng.normal(0, 0.3, size=(b, t))
    adv = np.array([1.5, -0.75, 0.3])[:b]
    mask = np.zeros((b, t), dtype=np.int64)
    mask[0, 2:] = 1
    mask[1, 1:4] = 1
    mask[2, 3:5] = 1
    return logp, old, rollout, ref, adv, mask


def tensors(*arrays):
    return [torch.tensor(a, dtype=torch.float64) for a in arrays]


AGGREGATIONS = ["token_mean", "seq_mean_token_mean", "seq_sum_const"]


# -- aggregation --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", AGGREGATIONS)
def test_aggregate_matches_numpy(kind):
    rng = np.random.default_rng(1)
    values = rng.normal(size=(3, 5))
    mask = np.array([[0, 1, 1, 1, 0], [1, 1, 0, 0, 0], [0, 0, 0, 1, 1]])
    got = aggregate(torch.tensor(values), torch.tensor(mask), kind)
    assert float(got) == pytest.approx(np_aggregate(values, mask, kind))


def test_aggregations_by_hand():
    values = torch.tensor([[1.0, 2.0, 3.0, 100.0], [4.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0]])
    assert float(aggregate(values, mask, "token_mean")) == pytest.approx(10 / 4)
    assert float(aggregate(values, mask, "seq_mean_token_mean")) == pytest.approx((2 + 4) / 2)
    assert float(aggregate(values, mask, "seq_sum_const")) == pytest.approx(10 / (2 * 4))
    assert float(aggregate(values, mask, "seq_sum_const", norm_length=10)) == pytest.approx(0.5)
    # gradient accumulation: the whole step's count divides every micro-batch
    assert float(aggregate(values, mask, "token_mean", normalizer=20)) == pytest.approx(0.5)
    assert float(aggregate(values, mask, "seq_mean_token_mean", normalizer=4)) == 1.5


def test_masked_infinities_do_not_poison_the_loss():
    values = torch.tensor([[1.0, float("inf")], [float("nan"), 3.0]])
    mask = torch.tensor([[1, 0], [0, 1]])
    for kind in AGGREGATIONS:
        assert math.isfinite(float(aggregate(values, mask, kind)))


def test_unknown_aggregation():
    with pytest.raises(gym.ConfigError, match="unknown aggregation"):
        aggregate(torch.zeros(1, 1), torch.ones(1, 1), "sum")  # type: ignore[arg-type]


# -- the policy loss ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", AGGREGATIONS)
@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"eps_low": 0.1, "eps_high": 0.1},
        {"tis_cap": None},
        {"tis_cap": 1.2},
        {"beta": 0.04},
        {"norm_length": 32},
    ],
)
def test_policy_loss_matches_numpy(kind, settings):
    cfg = LossConfig(aggregation=kind, **settings)
    logp, old, rollout, ref, adv, mask = batch()
    t_logp, t_old, t_roll, t_ref, t_adv = tensors(logp, old, rollout, ref, adv)
    loss, metrics = policy_loss(
        t_logp, t_roll, t_adv, torch.tensor(mask), cfg, old_logprobs=t_old, ref_logprobs=t_ref
    )
    expected = np_policy_loss(logp, old, rollout, adv, mask, cfg, ref)
    assert float(loss) == pytest.approx(expected, rel=1e-9)
    assert metrics.loss == pytest.approx(expected, rel=1e-9)
    assert metrics.tokens == int(mask.sum()) and metrics.sequences == 3
    if cfg.beta == 0:
        assert metrics.pg_loss == pytest.approx(metrics.loss) and metrics.kl == 0.0


def test_clipping_is_asymmetric_by_hand():
    # one token per sequence; log ratios chosen to land outside [0.8, 1.28]
    logp = torch.tensor([[math.log(1.5)], [math.log(0.5)], [math.log(1.5)], [math.log(1.1)]])
    old = torch.zeros(4, 1)
    adv = torch.tensor([1.0, -1.0, -1.0, 1.0])
    mask = torch.ones(4, 1)
    cfg = LossConfig(tis_cap=None)
    loss, m = policy_loss(logp, old, adv, mask, cfg, old_logprobs=old)
    # A>0, r=1.5 -> clipped at 1.28; A<0, r=0.5 -> clipped at 0.8; A<0, r=1.5 -> unclipped
    # (the pessimistic term is r*A); A>0, r=1.1 inside the range
    per_token = [-1.28, 0.8, 1.5, -1.1]
    assert float(loss) == pytest.approx(sum(per_token) / 4)
    assert (m.clip_high_fraction, m.clip_low_fraction, m.clip_fraction) == (0.25, 0.25, 0.5)
    assert m.ratio_mean == pytest.approx((1.5 + 0.5 + 1.5 + 1.1) / 4)


def test_one_update_per_batch_has_ratio_one_and_the_plain_gradient():
    logp, _, rollout, _, adv, mask = batch(seed=3)
    t_logp = torch.tensor(logp, requires_grad=True)
    t_roll, t_adv = tensors(rollout, adv)
    loss, metrics = policy_loss(t_logp, t_roll, t_adv, torch.tensor(mask), LossConfig())
    assert metrics.ratio_mean == 1.0 and metrics.clip_fraction == 0.0
    weight = np.minimum(np.exp(logp - rollout), 2.0)  # old = logp at mu = 1
    expected = -(adv[:, None] * weight * mask).sum() / mask.sum()
    assert float(loss.detach()) == pytest.approx(expected)
    loss.backward()
    # d/dlogp of -A * w * exp(logp - old) at logp = old is -A * w, divided by the count
    grad = -(adv[:, None] * weight * mask) / mask.sum()
    assert t_logp.grad is not None
    assert t_logp.grad.numpy() == pytest.approx(grad)
    assert metrics.tis_capped_fraction == pytest.approx(
        float(((np.exp(logp - rollout) > 2.0) * mask).sum() / mask.sum())
    )


def test_truncated_importance_weight_by_hand():
    # the sampler gave the token probability e^-2, the trainer e^-1: w = e^1, capped at 2
    logp, rollout = torch.tensor([[-1.0]]), torch.tensor([[-2.0]])
    loss, m = policy_loss(logp, rollout, torch.tensor([1.0]), torch.ones(1, 1))
    assert float(loss) == pytest.approx(-2.0) and m.tis_weight_mean == 2.0
    loss, m = policy_loss(
        logp, rollout, torch.tensor([1.0]), torch.ones(1, 1), LossConfig(tis_cap=5)
    )
    assert float(loss) == pytest.approx(-math.e) and m.tis_capped_fraction == 0.0


def test_k3_kl_by_hand():
    logp, ref = torch.tensor([[-1.0, -2.0]]), torch.tensor([[-1.5, -2.0]])
    cfg = LossConfig(beta=0.1)
    zero = torch.zeros(1)
    loss, m = policy_loss(logp, logp, zero, torch.ones(1, 2), cfg, ref_logprobs=ref)
    k3 = math.exp(-0.5) + 0.5 - 1  # and 0 for the equal token
    assert m.kl == pytest.approx(k3 / 2)
    assert float(loss) == pytest.approx(0.1 * k3 / 2)  # advantage 0: only the KL term


def test_beta_needs_reference_and_shapes_must_agree():
    with pytest.raises(gym.ConfigError, match="ref_logprobs"):
        policy_loss(
            torch.zeros(1, 2),
            torch.zeros(1, 2),
            torch.zeros(1),
            torch.ones(1, 2),
            LossConfig(beta=0.1),
        )
    with pytest.raises(gym.ConfigError, match="one shape"):
        policy_loss(torch.zeros(1, 2), torch.zeros(1, 3), torch.zeros(1), torch.ones(1, 2))


def test_config_defaults_and_validation():
    cfg = LossConfig()
    assert (cfg.aggregation, cfg.eps_low, cfg.eps_high, cfg.beta) == ("token_mean", 0.2, 0.28, 0.0)
    with pytest.raises(ValueError):
        LossConfig(eps_low=1.0)
    with pytest.raises(ValueError):
        LossConfig(tis_cap=0)


# -- the supervised loss ------------------------------------------------------------------


@pytest.mark.parametrize("kind", AGGREGATIONS)
def test_sft_loss_is_masked_negative_log_likelihood(kind):
    logp, *_, mask = batch(seed=5)
    weights = np.array([1.0, 0.0, 2.0])
    loss, m = sft_loss(torch.tensor(logp), torch.tensor(mask), kind, weights=torch.tensor(weights))
    expected = np_aggregate(-logp * weights[:, None], mask, kind)
    assert float(loss) == pytest.approx(expected) and m.tokens == int(mask.sum())


def test_sft_equals_policy_gradient_with_advantage_one_at_ratio_one():
    logp, _, _, _, _, mask = batch(seed=7)
    a = torch.tensor(logp, requires_grad=True)
    b = torch.tensor(logp, requires_grad=True)
    sft, _ = sft_loss(a, torch.tensor(mask))
    pg, _ = policy_loss(b, b.detach(), torch.ones(3, dtype=torch.float64), torch.tensor(mask))
    sft.backward()
    pg.backward()
    assert a.grad is not None and b.grad is not None
    assert torch.allclose(a.grad, b.grad)
