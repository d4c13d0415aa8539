"""One GRPO step on the tiny policy, end to end through gym.train."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

import gym
from gym._policy import TinyPolicy, build_tiny
from gym._policy._grammar import allowed_tokens
from gym._policy._local import render_prompt
from gym._policy._parse import format_call
from gym.train import (
    LossConfig,
    Sample,
    TrainEpisode,
    batch_loss,
    collate,
    grpo_samples,
    sample_allowed,
    token_logprobs,
    turn_tokens,
)

HAVE = all(importlib.util.find_spec(m) for m in ("torch", "transformers", "llguidance"))
pytestmark = pytest.mark.skipif(not HAVE, reason="needs torch, transformers and llguidance")

ANSWER = {
    "type": "function",
    "function": {
        "name": "answer",
        "description": "Give the answer.",
        "parameters": {
            "type": "object",
            "properties": {"value": {"type": "integer"}},
            "required": ["value"],
            "additionalProperties": False,
        },
    },
}
MESSAGES = [
    {"role": "system", "content": "Answer with the answer tool."},
    {"role": "user", "content": "What is 2 + 2?"},
]


@pytest.fixture
def loaded() -> Any:
    return build_tiny(seed=0)


def _sample(tok: Any, value: int, advantage: float) -> Sample:
    prompt = tok(render_prompt(tok, MESSAGES, [ANSWER]))["input_ids"]
    completion = [*tok(format_call("answer", {"value": value}))["input_ids"], tok.eos_token_id]
    return Sample(
        input_ids=prompt + completion,
        loss_mask=[0] * len(prompt) + [1] * len(completion),
        rollout_logprobs=[0.0] * (len(prompt) + len(completion)),
        turns=[0],
        advantage=advantage,
    )


def _logprobs(model: Any, batch: Any) -> Any:
    import torch

    with torch.no_grad():
        return token_logprobs(model, batch.input_ids, batch.attention_mask)


def test_one_grpo_step_moves_logprobs_the_way_the_advantages_say(loaded):
    import torch

    tok, model = loaded.tokenizer, loaded.model
    good, bad = _sample(tok, 4, 1.0), _sample(tok, 5, -1.0)
    batch = collate([good, bad], tok.pad_token_id)
    # where the two answers part: the token that says 4 in one and 5 in the other
    at = next(
        i for i, (a, b) in enumerate(zip(good.input_ids, bad.input_ids, strict=True)) if a != b
    )
    before = _logprobs(model, batch)
    batch.rollout_logprobs = before.clone()  # on-policy: the rollout logprobs are the model's
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss, metrics = batch_loss(model, batch, LossConfig())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    model.eval()
    after = _logprobs(model, batch)
    assert metrics.ratio_mean == 1.0 and metrics.tis_weight_mean == pytest.approx(1.0)
    assert metrics.tokens == good.sampled + bad.sampled
    assert after[0, at] > before[0, at]  # the rewarded answer became more likely
    assert after[1, at] < before[1, at]  # the punished one less
    # and the objective the step climbs, the sum of advantage x logprob, went up
    mask = batch.loss_mask.float()
    adv = batch.advantages[:, None]
    assert float((adv * after * mask).sum()) > float((adv * before * mask).sum())


@pytest.mark.slow
def test_rollout_logprobs_equal_the_trainers_masked_logprobs(loaded):
    """Through TITO samples, collate and the grammar replay, the importance ratio is 1."""
    task = gym.Task(id="add", family="arith", prompt="p")
    results = []
    for seed in range(2):
        policy = TinyPolicy.of(loaded, temperature=1.0, seed=seed, threads=None)
        policy.start(task, None)
        turn = policy.act(MESSAGES, [ANSWER])
        episode = TrainEpisode(
            group="arith/add",
            env_id="arith",
            split="train",
            outcome="pass" if seed == 0 else "fail",
            reward=1.0 if seed == 0 else 0.0,
            turns=turn_tokens([turn]),
        )
        results.append(episode)
    built = grpo_samples(results, "rloo", eos_token_id=loaded.tokenizer.eos_token_id)
    assert [s.advantage for s in built.samples] == [1.0, -1.0] and built.prefix_breaks == 0
    grammar = loaded.grammar()
    width = loaded.model.get_output_embeddings().weight.shape[0]
    allowed = [
        sample_allowed(s, [allowed_tokens(grammar, [ANSWER], e.turns[0].completion)], width)
        for s, e in zip(built.samples, results, strict=True)
    ]
    batch = collate(built.samples, loaded.tokenizer.pad_token_id, allowed=allowed)
    loss, metrics = batch_loss(loaded.model, batch, LossConfig())
    assert metrics.tis_weight_mean == pytest.approx(1.0, abs=1e-4)
    assert metrics.tis_capped_fraction == 0.0
    import torch

    with torch.no_grad():
        masked = token_logprobs(
            loaded.model, batch.input_ids, batch.attention_mask, allowed=batch.allowed
        )
    on = batch.loss_mask.bool()
    assert torch.allclose(masked[on], batch.rollout_logprobs[on], atol=1e-4)


def test_eval_split_episodes_are_refused():
    episode = TrainEpisode(
        group="g", env_id="toy/Answer-v0", split="eval", outcome="pass", reward=1.0
    )
    with pytest.raises(gym.errors.HeldOutError, match="not of a training split"):
        grpo_samples([episode, episode])
    assert grpo_samples([episode, episode], allow_eval=True).advantages.zero_variance_groups == 1
