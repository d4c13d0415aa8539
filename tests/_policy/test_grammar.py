"""The tool-call grammar: its schema, and what it lets a sampler write on a real tokenizer."""

from __future__ import annotations

import importlib
import importlib.util
import json
import random
import re
from typing import Any, Literal

import pytest
from policy_samples import BASH_TOOL, SUBMIT_TOOL, TOOLS

import gym
from gym._core._tools import tool_specs
from gym._policy import _grammar
from gym._policy._grammar import CallMask, call_grammar, call_schema, grammar_tokenizer
from gym._policy._parse import format_call, parse_tool_call

HAVE = all(importlib.util.find_spec(m) for m in ("torch", "transformers", "llguidance"))
needs_engine = pytest.mark.skipif(not HAVE, reason="needs torch, transformers and llguidance")


class Shop:
    """Tools with every kind of argument the grammar must keep valid."""

    @gym.tool(kind="write")
    def refund(
        self,
        order_id: str,
        amount: float,
        reason: Literal["damaged", "late", "other"],
        notify: bool = False,
        note: str = "",
    ) -> str:
        """Refund an order.

        Args:
            order_id: the order.
            amount: dollars.
            reason: why.
            notify: email the customer.
            note: free text.
        """
        return ""

    @gym.tool(kind="read")
    def count(self, items: list[str], limit: int) -> str:
        """Count items.

        Args:
            items: the items.
            limit: at most this many.
        """
        return ""

    @gym.tool(kind="final")
    def submit(self) -> str:
        """Finish."""
        return ""


SHOP = tool_specs(Shop())
SHOP_TOOLS = [spec.openai_schema() for spec, _ in SHOP.values()]


def test_schema_of_one_tool_and_of_several():
    one = call_schema([BASH_TOOL])
    assert one["properties"]["name"] == {"const": "bash"}
    assert one["properties"]["arguments"] == BASH_TOOL["function"]["parameters"]
    assert one["required"] == ["name", "arguments"] and one["additionalProperties"] is False
    both = call_schema(TOOLS)
    assert [o["properties"]["name"]["const"] for o in both["anyOf"]] == ["bash", "submit"]


def test_schema_refuses_no_tools_and_nameless_tools():
    with pytest.raises(gym.ConfigError, match="at least one tool"):
        call_schema([])
    with pytest.raises(gym.ConfigError, match="function name"):
        call_schema([{"type": "function", "function": {"parameters": {}}}])


def test_grammar_wraps_the_call_in_the_taught_tags():
    grammar = call_grammar(TOOLS)
    assert grammar.startswith('start: "<tool_call>\\n" call "\\n</tool_call>"\ncall: %json ')
    schema = json.loads(grammar.split("%json ", 1)[1])
    assert schema["x-guidance"] == {
        "whitespace_flexible": False,
        "item_separator": ", ",
        "key_separator": ": ",
    }


def test_missing_llguidance_says_how_to_install(monkeypatch):
    real = importlib.import_module

    def fake(name: str, *args: Any) -> Any:
        if name == "llguidance":
            raise ModuleNotFoundError("No module named 'llguidance'", name="llguidance")
        return real(name, *args)

    monkeypatch.setattr(_grammar.importlib, "import_module", fake)
    with pytest.raises(gym.ConfigError, match=r"llguidance.*constrained=False"):
        grammar_tokenizer(object(), 10)


# -- on a real tokenizer -------------------------------------------------------------------


@pytest.fixture(scope="module")
def tok() -> Any:
    from gym._policy._tiny import tiny_tokenizer

    return tiny_tokenizer()


def _sample(tok: Any, tools: list[dict[str, Any]], rng: random.Random) -> list[int]:
    """Tokens drawn from random scores under the mask (a stand-in for any model)."""
    import torch

    prompt = tok("<|im_start|>assistant\n")["input_ids"]
    mask = CallMask(grammar_tokenizer(tok, len(tok)), tools, len(prompt))
    ids = list(prompt)
    closing = [i for t, i in tok.get_vocab().items() if '"' in t or "}" in t or "]" in t]
    for _ in range(2000):
        scores = torch.tensor([[rng.gauss(0, 2) for _ in range(len(tok))]])
        scores[0, closing] += 3.0  # keep strings and lists short
        masked = mask(torch.tensor([ids]), scores)
        probs = torch.softmax(masked[0], -1)
        token = int(
            torch.multinomial(
                probs, 1, generator=torch.Generator().manual_seed(rng.randrange(1 << 30))
            )
        )
        ids.append(token)
        if token == tok.eos_token_id:
            return ids[len(prompt) :]
    raise AssertionError("the grammar never let the call end")


@needs_engine
@pytest.mark.parametrize("seed", range(12))
def test_every_sampled_completion_is_a_valid_call(tok, seed):
    rng = random.Random(seed)
    ids = _sample(tok, SHOP_TOOLS, rng)
    assert ids[-1] == tok.eos_token_id and tok.eos_token_id not in ids[:-1]
    text = tok.decode(ids, skip_special_tokens=True)
    found = parse_tool_call(text, list(SHOP), fallbacks=False)
    if found.call is None:  # JSON numbers may pass float's range; no tool takes infinity
        assert "out of range for a number" in found.error, (text, found.error)
        assert re.search(r"\d[eE]\+?\d{3,}", text), text
        return
    spec, _ = SHOP[found.call.name]
    spec.validate_args(found.call.arguments)  # raises when the schema is not met
    # laid out as format_call writes it, so the transcript reads as before
    head = f'<tool_call>\n{{"name": "{found.call.name}", "arguments": {{'
    assert text.startswith(head) and text.endswith("}}\n</tool_call>"), text


@needs_engine
def test_the_mask_allows_only_the_grammar(tok):
    import torch

    mask = CallMask(grammar_tokenizer(tok, len(tok)), [SUBMIT_TOOL], 0)
    allowed = mask.allowed()
    first = [tok.convert_ids_to_tokens(i) for i in torch.nonzero(allowed)[:, 0].tolist()]
    assert first and all("<tool_call>".startswith(t) for t in first)
    # once the whole call is written, only the end-of-turn token may follow
    body = tok(format_call("submit", {}))["input_ids"]
    mask(torch.tensor([body]), torch.zeros(1, len(tok)))
    assert torch.nonzero(mask.allowed())[:, 0].tolist() == [tok.eos_token_id]
    # a token the grammar forbids is refused, with the reason
    bad = tok("<tool_call>\nnope")["input_ids"]
    with pytest.raises(gym.PolicyError, match="breaks the grammar"):
        CallMask(grammar_tokenizer(tok, len(tok)), [SUBMIT_TOOL], 0)(
            torch.tensor([bad]), torch.zeros(1, len(tok))
        )


@needs_engine
def test_scores_wider_than_the_vocabulary_are_masked_too(tok):
    import torch

    width = len(tok) + 7  # models often pad their embedding matrix
    mask = CallMask(grammar_tokenizer(tok, width), [SUBMIT_TOOL], 0)
    out = mask(torch.zeros(1, 0, dtype=torch.long), torch.zeros(1, width))
    assert out.shape == (1, width) and torch.isinf(out[0, len(tok) :]).all()


# -- the budget: a call always closes within it -----------------------------------------------


def _never_closing(tok: Any, tools: list[dict[str, Any]], budget: int, seed: int) -> list[int]:
    """Tokens a sampler draws under a budgeted mask while preferring digits and letters.

    A stand-in for a model stuck in a repetition (``1000000...`` inside a string): left
    alone, the grammar would let it write until any budget cut the call.
    """
    import torch

    rng = random.Random(seed)
    mask = CallMask(grammar_tokenizer(tok, len(tok)), tools, 0, budget)
    stuck = [i for t, i in tok.get_vocab().items() if t and all(c in "0123456789a" for c in t)]
    ids: list[int] = []
    for _ in range(budget):
        scores = torch.tensor([[rng.gauss(0, 1) for _ in range(len(tok))]])
        scores[0, stuck] += 8.0
        masked = mask(torch.tensor([ids], dtype=torch.long).reshape(1, -1), scores)
        gen = torch.Generator().manual_seed(rng.randrange(1 << 30))
        ids.append(int(torch.multinomial(torch.softmax(masked[0], -1), 1, generator=gen)))
        if ids[-1] == tok.eos_token_id:
            break
    return ids


@needs_engine
@pytest.mark.parametrize(("budget", "seed"), [(b, s) for b in (80, 120, 200) for s in range(4)])
def test_a_call_that_would_never_close_still_ends_within_its_budget(tok, budget, seed):
    ids = _never_closing(tok, SHOP_TOOLS, budget, seed)
    assert len(ids) <= budget and ids[-1] == tok.eos_token_id
    found = parse_tool_call(tok.decode(ids, skip_special_tokens=True), list(SHOP), fallbacks=False)
    assert found.call is not None
    SHOP[found.call.name][0].validate_args(found.call.arguments)


@needs_engine
def test_without_a_budget_the_same_sampler_runs_on(tok):
    """The budget, not the sampler's taste, is what closed the calls above."""
    import torch

    rng = random.Random(1)
    mask = CallMask(grammar_tokenizer(tok, len(tok)), SHOP_TOOLS, 0)
    stuck = [i for t, i in tok.get_vocab().items() if t and all(c in "0123456789a" for c in t)]
    ids: list[int] = []
    for _ in range(200):
        scores = torch.tensor([[rng.gauss(0, 1) for _ in range(len(tok))]])
        scores[0, stuck] += 8.0
        masked = mask(torch.tensor([ids], dtype=torch.long).reshape(1, -1), scores)
        ids.append(int(masked[0].argmax()))
    assert tok.eos_token_id not in ids


@needs_engine
def test_the_reserve_covers_the_longest_shortest_call(tok):
    grammar = grammar_tokenizer(tok, len(tok))
    submit = _grammar.closing_tokens(_llg_matcher(grammar, [SUBMIT_TOOL]), grammar)
    assert submit is not None
    assert tok.decode(submit) == format_call("submit", {})  # then only end of turn
    refund = [t for t in SHOP_TOOLS if t["function"]["name"] == "refund"]
    longest = _grammar.closing_tokens(_llg_matcher(grammar, refund), grammar)
    assert longest is not None
    reserve = _grammar.closing_reserve(grammar, SHOP_TOOLS)
    assert reserve == len(longest) + 1 + _grammar.MARGIN  # the end-of-turn token too


def _llg_matcher(grammar: Any, tools: list[dict[str, Any]]) -> Any:
    import llguidance

    return llguidance.LLMatcher(grammar, call_grammar(tools))


@needs_engine
def test_forced_tokens_replay_from_the_budget_and_cost_nothing(tok):
    """`allowed_tokens` with the budget gives one allowed token where the closing was forced."""
    budget, refund = 120, [t for t in SHOP_TOOLS if t["function"]["name"] == "refund"]
    ids = _never_closing(tok, refund, budget, seed=0)
    grammar = grammar_tokenizer(tok, len(tok))
    rows = _grammar.allowed_tokens(grammar, refund, ids, budget)
    assert rows.shape == (len(ids), len(tok))
    single = rows.sum(-1) == 1
    reserve = _grammar.closing_reserve(grammar, refund)
    assert reserve is not None
    # the sampler was still inside order_id when only the reserve was left; from there
    # every step allowed exactly one token
    forced_from = budget - reserve
    assert len(ids) > forced_from and bool(single[forced_from:].all())
    assert all(bool(rows[i, t]) for i, t in enumerate(ids))  # what was sampled was allowed
    # replayed without the budget, the forced steps allow more than one token again
    free = _grammar.allowed_tokens(grammar, refund, ids[: forced_from + 1])
    assert int(free[forced_from].sum()) > 1
    # a replay with the wrong budget does not match what was sampled
    with pytest.raises(gym.PolicyError, match="forced"):
        _grammar.allowed_tokens(grammar, refund, ids, budget - 30)
