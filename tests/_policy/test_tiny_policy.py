"""The tiny policy: built in code, always a valid call, exact logprobs, and it trains."""

from __future__ import annotations

import importlib.util
import re
from typing import Any

import pytest
from test_grammar import SHOP, SHOP_TOOLS

import gym
from gym._policy import TinyPolicy, build_tiny, policy_from_name, save_tiny
from gym._policy._grammar import allowed_tokens
from gym._policy._parse import parse_tool_call
from gym._policy._tiny import tiny_tokenizer

HAVE = all(importlib.util.find_spec(m) for m in ("torch", "transformers", "llguidance"))
pytestmark = pytest.mark.skipif(not HAVE, reason="needs torch, transformers and llguidance")

MESSAGES = [
    {"role": "system", "content": "You are an agent. Refund what is owed."},
    {"role": "user", "content": "Order O5001 arrived damaged; refund $12.50."},
]
TASK = gym.Task(id="refund-1", family="shop", prompt="p")


@pytest.fixture(scope="module")
def loaded() -> Any:
    return build_tiny(seed=0)


def policy(loaded: Any, **settings: Any) -> TinyPolicy:
    settings.setdefault("threads", None)
    pol = TinyPolicy.of(loaded, **settings)
    assert isinstance(pol, TinyPolicy)
    pol.start(TASK, None)
    return pol


def test_tokenizer_is_built_the_same_every_time_and_covers_any_text():
    a, b = tiny_tokenizer(), tiny_tokenizer()
    assert a.backend_tokenizer.to_str() == b.backend_tokenizer.to_str()
    assert len(a) == 512
    text = 'naïve café ✓ \t\n {"k": [1, 2]} 日本'
    assert a.decode(a(text)["input_ids"]) == text  # byte-level: nothing is unknown
    assert (a.eos_token, a.pad_token) == ("<|im_end|>", "<|pad|>")
    assert a.pad_token_id != a.eos_token_id
    rendered = a.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=False)
    assert rendered.endswith("<|im_end|>\n<|im_start|>assistant\n")


def test_model_is_small_and_seeded(loaded):
    n = sum(p.numel() for p in loaded.model.parameters())
    assert 200_000 < n < 5_000_000
    again = build_tiny(seed=0).model.state_dict()
    other = build_tiny(seed=1).model.state_dict()
    key = "model.layers.0.self_attn.q_proj.weight"
    assert (loaded.model.state_dict()[key] == again[key]).all()
    assert not (loaded.model.state_dict()[key] == other[key]).all()


def test_named_by_the_cli():
    pol = policy_from_name("tiny", temperature=1.0)
    assert isinstance(pol, TinyPolicy) and pol.params()["constrained"] is True
    assert pol.params()["init_seed"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_sampled_turns_are_always_valid_calls(loaded, seed):
    turn = policy(loaded, temperature=1.0, seed=seed).act(MESSAGES, SHOP_TOOLS)
    if turn.call is None:  # the grammar lets a number pass float's range; no tool takes it
        assert "out of range for a number" in turn.parse_error, turn.message["content"]
        assert re.search(r"\d[eE]\+?\d{3,}", turn.message["content"])
        return
    assert turn.parse_error == "", turn.message["content"]
    spec, _ = SHOP[turn.call.name]
    spec.validate_args(turn.call.arguments)
    assert (
        turn.completion_token_ids and turn.completion_token_ids[-1] == loaded.tokenizer.eos_token_id
    )
    assert parse_tool_call(
        turn.message["content"], list(SHOP), fallbacks=False
    ).call == turn.call.model_copy(update={"id": None})


@pytest.mark.slow
def test_unconstrained_untrained_tiny_model_makes_no_call(loaded):
    turns = [
        policy(loaded, temperature=1.0, seed=s, constrained=False, max_new_tokens=48).act(
            MESSAGES, SHOP_TOOLS
        )
        for s in range(3)
    ]
    assert all(t.call is None for t in turns)  # an untrained model writes noise


def _replayed_logprobs(loaded: Any, turn: Any, temperature: float) -> list[float]:
    """The masked, tempered log-softmax at each sampled token, from one forward pass."""
    import torch

    prompt, ids = turn.prompt_token_ids, turn.completion_token_ids
    allowed = allowed_tokens(loaded.grammar(), SHOP_TOOLS, ids)
    with torch.inference_mode():
        logits = loaded.model(torch.tensor([prompt + ids])).logits[0, len(prompt) - 1 : -1]
    logits = logits.float().masked_fill(~allowed, float("-inf"))
    logprobs = torch.log_softmax(logits / temperature, -1)
    return logprobs.gather(1, torch.tensor(ids)[:, None])[:, 0].tolist()


@pytest.mark.slow
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_recorded_logprobs_are_the_samplers_after_masking(loaded, temperature):
    turn = policy(loaded, temperature=temperature, seed=11).act(MESSAGES, SHOP_TOOLS)
    expected = _replayed_logprobs(loaded, turn, temperature)
    assert turn.logprobs == pytest.approx(expected, abs=1e-4)
    assert max(turn.logprobs) == pytest.approx(0.0, abs=1e-6)  # forced tokens: probability 1


@pytest.mark.slow
def test_greedy_takes_the_masked_argmax(loaded):
    import torch

    turn = policy(loaded).act(MESSAGES, SHOP_TOOLS)
    prompt, ids = turn.prompt_token_ids, turn.completion_token_ids
    allowed = allowed_tokens(loaded.grammar(), SHOP_TOOLS, ids)
    with torch.inference_mode():
        logits = loaded.model(torch.tensor([prompt + ids])).logits[0, len(prompt) - 1 : -1]
    assert logits.masked_fill(~allowed, float("-inf")).argmax(-1).tolist() == ids


@pytest.mark.slow
def test_checkpoint_round_trip(loaded, tmp_path):
    folder = save_tiny(loaded, tmp_path / "ckpt")
    a = policy(loaded).act(MESSAGES, SHOP_TOOLS)
    b = TinyPolicy(str(folder), threads=None)
    b.start(TASK, None)
    turn = b.act(MESSAGES, SHOP_TOOLS)
    assert turn.completion_token_ids == a.completion_token_ids
    assert turn.prompt_token_ids == a.prompt_token_ids


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_a_tight_budget_still_ends_in_a_valid_call_and_forced_tokens_cost_nothing(loaded, seed):
    import torch

    from gym._policy._grammar import closing_reserve

    refund = [t for t in SHOP_TOOLS if t["function"]["name"] == "refund"]
    reserve = closing_reserve(loaded.grammar(), refund)
    assert reserve is not None
    budget = reserve + 12  # a dozen free tokens, then the grammar closes the call
    pol = policy(loaded, temperature=1.0, seed=seed, max_new_tokens=budget)
    turn = pol.act(MESSAGES, refund)
    ids = turn.completion_token_ids
    assert (
        turn.call is not None
        and len(ids) <= budget
        and ids[-1] == pol.load().tokenizer.eos_token_id
    )
    SHOP["refund"][0].validate_args(turn.call.arguments)
    # the replay with the same budget gives the masks the sampler drew under
    allowed = allowed_tokens(
        loaded.grammar(), refund, ids, pol.turn_budget(len(turn.prompt_token_ids))
    )
    with torch.inference_mode():
        prompt = turn.prompt_token_ids
        logits = loaded.model(torch.tensor([prompt + ids])).logits[0, len(prompt) - 1 : -1]
    logprobs = torch.log_softmax(logits.float().masked_fill(~allowed, float("-inf")), -1)
    expected = logprobs.gather(1, torch.tensor(ids)[:, None])[:, 0]
    assert turn.logprobs == pytest.approx(expected.tolist(), abs=1e-4)
    forced = allowed.sum(-1) == 1
    assert bool(forced[budget - reserve :].all())
    assert all(turn.logprobs[i] == 0.0 for i in torch.nonzero(forced)[:, 0].tolist())
