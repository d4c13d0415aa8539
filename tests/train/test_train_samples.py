"""Token-in/token-out samples on real token ids: the prefix property, its breaks, the masks."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

import gym
import gym.policies
from gym._policy._local import render_prompt
from gym._policy._parse import format_call
from gym.train import Sample, TurnTokens, episode_samples, turn_tokens

HAVE = all(importlib.util.find_spec(m) for m in ("torch", "transformers", "tokenizers"))
pytestmark = pytest.mark.skipif(not HAVE, reason="needs torch and transformers (the train extra)")

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a command.",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        },
    }
]
START = [
    {"role": "system", "content": "You are an agent."},
    {"role": "user", "content": "List the files, then show main.py."},
]
CALLS = [{"command": "ls"}, {"command": "cat main.py"}]
RESULTS = ["main.py\nREADME.md", "print('héllo')  # ünïcode"]


HAVE_SMOL = HAVE and importlib.util.find_spec("gguf") is not None


@pytest.fixture(
    scope="module",
    params=[
        "tiny",
        pytest.param(
            "smollm2",
            marks=[
                pytest.mark.slow,
                pytest.mark.skipif(not HAVE_SMOL, reason="needs the local extra"),
            ],
        ),
    ],
)
def tokenizer(request: pytest.FixtureRequest) -> Any:
    if request.param == "tiny":
        from gym._policy._tiny import tiny_tokenizer

        return tiny_tokenizer()
    from gym._policy._local import load_model

    return load_model().tokenizer  # SmolLM2-135M-Instruct's own (converted once, cached)


def _after(messages: list[dict[str, Any]], turn: int) -> list[dict[str, Any]]:
    """The conversation once ``turn`` calls were made and answered."""
    out = list(messages)
    for i in range(turn):
        text = format_call("bash", CALLS[i])
        out.append({"role": "assistant", "content": text})
        out.append({"role": "tool", "tool_call_id": f"c{i}", "content": RESULTS[i]})
    return out


def _prompt(tokenizer: Any, turn: int) -> list[int]:
    return tokenizer(render_prompt(tokenizer, _after(START, turn), TOOLS))["input_ids"]


def _canonical(tokenizer: Any, turn: int) -> list[int]:
    """The ids a policy samples when it writes the call the tokenizer's way, then stops."""
    ids = tokenizer(format_call("bash", CALLS[turn]))["input_ids"]
    return [*ids, tokenizer.eos_token_id]


def _per_byte(tokenizer: Any, turn: int) -> list[int]:
    """The same text sampled one byte per token (a valid but non-canonical tokenization)."""
    pieces = tokenizer.convert_ids_to_tokens(_canonical(tokenizer, turn)[:-1])
    chars = [c for piece in pieces for c in piece]
    return [*tokenizer.convert_tokens_to_ids(chars), tokenizer.eos_token_id]


def _turns(tokenizer: Any, completions: list[list[int]]) -> list[TurnTokens]:
    return [
        TurnTokens(
            prompt=_prompt(tokenizer, i),
            completion=ids,
            logprobs=[-0.01 * (i + 1) * (k + 1) for k in range(len(ids))],
        )
        for i, ids in enumerate(completions)
    ]


def test_prefix_property_gives_one_sample_with_exact_masks(tokenizer):
    turns = _turns(tokenizer, [_canonical(tokenizer, 0), _canonical(tokenizer, 1)])
    built = episode_samples(turns, eos_token_id=tokenizer.eos_token_id)
    assert built.prefix_breaks == 0 and len(built.samples) == 1
    sample = built.samples[0]
    p0, c0, c1 = turns[0].prompt, turns[0].completion, turns[1].completion
    env = turns[1].prompt[len(p0) + len(c0) :]
    assert sample.input_ids == p0 + c0 + env + c1
    assert sample.input_ids[: len(turns[1].prompt)] == turns[1].prompt
    assert sample.loss_mask == [0] * len(p0) + [1] * len(c0) + [0] * len(env) + [1] * len(c1)
    assert sample.rollout_logprobs == (
        [0.0] * len(p0) + turns[0].logprobs + [0.0] * len(env) + turns[1].logprobs
    )
    assert sample.turns == [0, 1] and not sample.truncated
    assert sample.sampled == len(c0) + len(c1)
    # the environment's tokens are the tool result as the chat template renders it
    text = tokenizer.decode(env)
    assert text == (
        f"\n<|im_start|>user\n<tool_response>\n{RESULTS[0]}\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_a_non_canonical_tokenization_breaks_the_prefix_and_splits(tokenizer):
    first = _per_byte(tokenizer, 0)
    assert first != _canonical(tokenizer, 0)
    assert tokenizer.decode(first) == tokenizer.decode(_canonical(tokenizer, 0))
    turns = _turns(tokenizer, [first, _canonical(tokenizer, 1)])
    built = episode_samples(turns, eos_token_id=tokenizer.eos_token_id)
    assert built.prefix_breaks == 1 and [s.turns for s in built.samples] == [[0], [1]]
    for sample, turn in zip(built.samples, turns, strict=True):
        assert sample.input_ids == turn.prompt + turn.completion
        assert sample.loss_mask == [0] * len(turn.prompt) + [1] * len(turn.completion)
        assert sample.rollout_logprobs[len(turn.prompt) :] == turn.logprobs


def test_a_completion_cut_by_the_budget_is_marked_truncated(tokenizer):
    cut = _canonical(tokenizer, 0)[:5]
    built = episode_samples(_turns(tokenizer, [cut]), eos_token_id=tokenizer.eos_token_id)
    assert built.samples[0].truncated
    assert not episode_samples(_turns(tokenizer, [cut])).samples[0].truncated  # eos unknown


def test_no_turns_no_samples():
    assert episode_samples([]).samples == []


def test_turn_tokens_reads_turns_and_refuses_incomplete_ones():
    turn = gym.policies.Turn(
        message={"role": "assistant", "content": "x"},
        prompt_token_ids=[1, 2],
        completion_token_ids=[3],
        logprobs=[-0.5],
    )
    assert turn_tokens([turn]) == [TurnTokens(prompt=[1, 2], completion=[3], logprobs=[-0.5])]
    with pytest.raises(gym.ConfigError, match="turn 0 has no prompt token ids"):
        turn_tokens([turn.model_copy(update={"prompt_token_ids": None})])
    with pytest.raises(gym.ConfigError, match="1 sampled tokens but 2 logprobs"):
        turn_tokens([turn.model_copy(update={"logprobs": [-0.5, -0.1]})])


def test_sample_round_trips_as_json():
    sample = Sample(input_ids=[1, 2], loss_mask=[0, 1], rollout_logprobs=[0.0, -0.2], turns=[0])
    assert Sample.model_validate_json(sample.model_dump_json()) == sample
