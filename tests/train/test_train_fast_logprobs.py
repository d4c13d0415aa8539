"""The trainer's fast path (log-probabilities of the sampled tokens only) changes nothing.

`token_logprobs` with ``needed`` runs the output head, the grammar mask and the softmax
on the completion columns only, and `LocalWeights.update` keeps the first iteration's
log-probabilities instead of a separate pass before it. Against the full computation
(every column, a no-grad pass first) the loss, the gradients and the updated weights
agree to 1e-6.
"""

from __future__ import annotations

import copy
import importlib.util
from typing import Any

import pytest

from gym._policy import build_tiny
from gym.train import LossConfig, Sample, batch_loss, collate, policy_loss, token_logprobs
from gym.train._batch import Batch
from gym.train._grpo_weights import LocalWeights

HAVE = all(importlib.util.find_spec(m) for m in ("torch", "transformers"))
pytestmark = pytest.mark.skipif(not HAVE, reason="needs torch and transformers")


@pytest.fixture
def loaded() -> Any:
    return build_tiny(seed=0)


def _batch(loaded: Any, *, constrained: bool = True) -> Batch:
    """Three samples of different lengths; one has two turns (a gap in its loss mask)."""
    import torch

    gen = torch.Generator().manual_seed(0)
    vocab = int(loaded.model.get_output_embeddings().weight.shape[0])
    shapes = [(40, [6]), (25, [9]), (31, [4, 7, 5])]  # prompt length, completion lengths
    samples, allowed = [], []
    for prompt_len, parts in shapes:
        ids = torch.randint(3, vocab, (prompt_len,), generator=gen).tolist()
        mask = [0] * prompt_len
        for i, part in enumerate(parts):
            if i:  # the environment's tokens between two turns
                ids += torch.randint(3, vocab, (3,), generator=gen).tolist()
                mask += [0] * 3
            ids += torch.randint(3, vocab, (part,), generator=gen).tolist()
            mask += [1] * part
        rollout = [-1.5 if m else 0.0 for m in mask]
        samples.append(
            Sample(
                input_ids=ids,
                loss_mask=mask,
                rollout_logprobs=rollout,
                turns=list(range(len(parts))),
                advantage=float(torch.randn(1, generator=gen)),
            )
        )
        rows = torch.rand(len(ids), vocab, generator=gen) < 0.3  # a grammar's masks
        rows[torch.arange(len(ids)), torch.tensor(ids)] = True  # the sampled token allowed
        rows[torch.tensor(mask) == 0] = True
        allowed.append(rows)
    return collate(samples, loaded.tokenizer.pad_token_id, allowed=allowed if constrained else None)


def _full(model: Any, batch: Batch, temperature: float = 1.0) -> Any:
    return token_logprobs(
        model,
        batch.input_ids,
        batch.attention_mask,
        temperature=temperature,
        allowed=batch.allowed,
    )


@pytest.mark.parametrize("constrained", [True, False])
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_needed_logprobs_equal_the_full_ones(loaded, constrained, temperature):
    import torch

    batch = _batch(loaded, constrained=constrained)
    with torch.no_grad():
        full = _full(loaded.model, batch, temperature)
        fast = token_logprobs(
            loaded.model,
            batch.input_ids,
            batch.attention_mask,
            temperature=temperature,
            allowed=batch.allowed,
            needed=batch.loss_mask,
        )
    on = batch.loss_mask.bool()
    assert fast.shape == full.shape
    assert torch.allclose(fast[on], full[on], atol=1e-6, rtol=0)
    needed_columns = on.any(0)
    assert (fast[:, ~needed_columns] == 0).all()  # prompt-only columns are not computed


def test_nothing_needed_falls_back_to_every_column(loaded):
    import torch

    batch = _batch(loaded)
    with torch.no_grad():
        full = _full(loaded.model, batch)
        none = token_logprobs(
            loaded.model,
            batch.input_ids,
            batch.attention_mask,
            allowed=batch.allowed,
            needed=torch.zeros_like(batch.loss_mask),
        )
    assert torch.equal(none, full)


def _grads(model: Any) -> list[Any]:
    return [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize("beta", [0.0, 0.1])
def test_batch_loss_and_gradients_equal_the_full_computation(loaded, beta):
    import torch

    model = loaded.model
    batch = _batch(loaded)
    reference = copy.deepcopy(model)
    with torch.no_grad():
        for p in reference.parameters():
            p.add_(0.01 * torch.randn_like(p))
        old = _full(model, batch) + 0.05 * batch.loss_mask  # ratios away from 1: clipping
        ref = _full(reference, batch) if beta else None
    config = LossConfig(beta=beta)
    model.train()

    model.zero_grad()
    expected, expected_metrics = policy_loss(
        _full(model, batch),
        batch.rollout_logprobs,
        batch.advantages,
        batch.loss_mask,
        config,
        old_logprobs=old,
        ref_logprobs=ref,
    )
    expected.backward()
    expected_grads = _grads(model)

    model.zero_grad()
    loss, metrics = batch_loss(model, batch, config, reference=lambda: reference, old_logprobs=old)
    loss.backward()
    assert float(loss.detach()) == pytest.approx(float(expected.detach()), abs=1e-6)
    assert metrics.model_dump() == pytest.approx(expected_metrics.model_dump(), abs=1e-6)
    for got, want in zip(_grads(model), expected_grads, strict=True):
        assert torch.allclose(got, want, atol=1e-6, rtol=0)


def _old_update(model: Any, optimizer: Any, batch: Batch, config: LossConfig, mu: int) -> float:
    """`LocalWeights.update` as it was: a no-grad pass first, every column computed."""
    import torch

    model.train()
    with torch.no_grad():
        before = _full(model, batch)
    for _ in range(mu):
        loss, _ = policy_loss(
            _full(model, batch),
            batch.rollout_logprobs,
            batch.advantages,
            batch.loss_mask,
            config,
            old_logprobs=before if mu > 1 else None,
        )
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        after = _full(model, batch)
    model.eval()
    delta = (after - before).masked_fill(~batch.loss_mask.bool(), 0.0)
    return float((torch.exp(delta) - delta - 1).sum()) / int(batch.loss_mask.sum())


@pytest.mark.parametrize("mu", [1, 4])
def test_update_moves_the_weights_as_before(loaded, mu):
    import torch

    batch = _batch(loaded)
    twin = copy.deepcopy(loaded.model)
    weights = LocalWeights(
        loaded=loaded,
        kind="tiny",
        optimizer=torch.optim.SGD(loaded.model.parameters(), lr=0.5),
    )
    config = LossConfig()
    expected_kl = _old_update(twin, torch.optim.SGD(twin.parameters(), lr=0.5), batch, config, mu)
    metrics = weights.update(batch, config, iterations=mu)
    assert metrics.update_kl > 0
    assert metrics.update_kl == pytest.approx(expected_kl, abs=1e-6)
    for got, want in zip(loaded.model.parameters(), twin.parameters(), strict=True):
        assert torch.allclose(got, want, atol=1e-6, rtol=0)
