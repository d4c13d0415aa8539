"""Constrained decoding: every completion is one valid call of an offered tool.

The grammar is the text tool-call form the local policies teach and parse (see
`gym._policy._parse`), with the call's JSON constrained by the offered tools' schemas::

    <tool_call>
    {"name": "bash", "arguments": {"command": "ls"}}
    </tool_call><end of turn>

``name`` is one of the offered tools and ``arguments`` is valid against that tool's
JSON schema; the JSON is written the way `format_call` writes it (``", "`` and
``": "`` separators, no other whitespace), so the transcript reads as before. After
the closing tag only the tokenizer's end-of-turn token is allowed.

The grammar runs on llguidance (``pip install llguidance``; in the ``local`` extra):
measured on this project's 2-core CPU machine, its per-token mask costs about 1 ms,
as xgrammar's does, under 1% of one SmolLM2-135M forward pass, and it needs no other
package, where xgrammar pulls in triton (about 1 GB) on Linux (bench/grammar_overhead.py).
llguidance is one of vLLM's structured-output backends too.

`CallMask` is a transformers logits processor: it masks the scores of every token the
grammar forbids at each step of ``generate``. torch, transformers and llguidance are
imported only inside the functions that need them.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

from gym._errors import ConfigError, PolicyError

__all__ = ["CallMask", "allowed_tokens", "call_grammar", "call_schema", "grammar_tokenizer"]

JSON_STYLE = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
"""How the call's JSON is laid out: as ``json.dumps`` writes it (see `format_call`)."""


def _function(tool: dict[str, Any]) -> dict[str, Any]:
    fn = tool.get("function", tool)
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        raise ConfigError(f"a tool schema needs a function name: {json.dumps(tool)[:200]}")
    return fn


def call_schema(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON schema of one call of one of the tools: ``{"name": ..., "arguments": ...}``.

    Args:
        tools: OpenAI tool schemas (``{"type": "function", "function": {...}}``).

    Raises:
        ConfigError: no tools, or a tool without a name.
    """
    if not tools:
        raise ConfigError("constrained decoding needs at least one tool")
    options = []
    for fn in map(_function, tools):
        params = fn.get("parameters") or {"type": "object", "properties": {}}
        options.append(
            {
                "type": "object",
                "properties": {"name": {"const": fn["name"]}, "arguments": params},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    return options[0] if len(options) == 1 else {"anyOf": options}


def call_grammar(tools: list[dict[str, Any]]) -> str:
    """The llguidance (Lark) grammar of a ``<tool_call>`` block holding one valid call.

    Args:
        tools: OpenAI tool schemas.
    """
    schema = {**call_schema(tools), "x-guidance": JSON_STYLE}
    return 'start: "<tool_call>\\n" call "\\n</tool_call>"\ncall: %json ' + json.dumps(schema)


def _llguidance() -> Any:
    try:
        return importlib.import_module("llguidance")
    except ImportError as exc:
        raise ConfigError(
            "constrained decoding needs llguidance: pip install -e '.[local]' "
            "(or pass constrained=False)"
        ) from exc


def grammar_tokenizer(tokenizer: Any, vocab_size: int) -> Any:
    """The llguidance view of a Hugging Face fast tokenizer (about a second: cache it).

    Args:
        tokenizer: a transformers fast tokenizer whose ``eos_token`` ends a turn.
        vocab_size: the width of the model's logits (may exceed the tokenizer's vocab).
    """
    _llguidance()  # says how to install it when it is missing
    hf = importlib.import_module("llguidance.hf")
    try:
        return hf.from_tokenizer(tokenizer, n_vocab=vocab_size)
    except ValueError as exc:
        raise ConfigError(f"constrained decoding needs a fast tokenizer: {exc}") from exc


class CallMask:
    """Masks the scores of tokens the tool-call grammar forbids (a logits processor).

    One instance serves one generation: it follows the tokens ``generate`` appends
    after the prompt. Forbidden tokens get ``-inf``, so the scores ``generate``
    returns with ``output_scores`` are the constrained distribution the sampler drew
    from.

    Args:
        grammar_tok: from `grammar_tokenizer`.
        tools: the offered tools.
        prompt_len: how many tokens the prompt has.
    """

    def __init__(self, grammar_tok: Any, tools: list[dict[str, Any]], prompt_len: int) -> None:
        llg = _llguidance()
        self.matcher = llg.LLMatcher(grammar_tok, call_grammar(tools))
        if self.matcher.is_error():
            raise ConfigError(f"the tools' schemas give no usable grammar: {self._error()}")
        self.prompt_len = prompt_len
        self.seen = prompt_len
        self.vocab_size = int(grammar_tok.vocab_size)

    def _error(self) -> str:
        return str(self.matcher.get_error())

    def allowed(self) -> Any:
        """A boolean tensor over the vocabulary: the tokens the grammar allows next."""
        torch = importlib.import_module("torch")
        words = torch.frombuffer(bytearray(self.matcher.compute_bitmask()), dtype=torch.uint8)
        bits = (words[:, None] >> torch.arange(8, dtype=torch.uint8)) & 1
        return bits.reshape(-1)[: self.vocab_size].bool()

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        """Consume the token sampled last, then mask what may not follow it."""
        for token in input_ids[0, self.seen :].tolist():
            if not self.matcher.consume_token(int(token)):
                raise PolicyError(f"the sampled token {token} breaks the grammar: {self._error()}")
        self.seen = int(input_ids.shape[1])
        allowed = self.allowed()
        if not bool(allowed.any()):
            raise PolicyError(f"the tool-call grammar allows no token: {self._error()}")
        width = scores.shape[-1]
        keep = allowed[:width] if allowed.numel() >= width else _pad(allowed, width)
        return scores.masked_fill(~keep, float("-inf"))


def _pad(allowed: Any, width: int) -> Any:
    torch = importlib.import_module("torch")
    return torch.cat([allowed, torch.zeros(width - allowed.numel(), dtype=torch.bool)])


def allowed_tokens(grammar_tok: Any, tools: list[dict[str, Any]], completion: list[int]) -> Any:
    """The tokens the grammar allowed at each step of a completion, [len(completion), V].

    Replays the grammar over sampled ids: a trainer that computes its log-probabilities
    under the same mask (`gym.train.token_logprobs` with ``allowed=``) optimises the
    policy that actually acted, whose logprobs the constrained policies record.

    Args:
        grammar_tok: from `grammar_tokenizer`.
        tools: the tools offered at that turn.
        completion: the sampled ids (the end-of-turn token included).

    Raises:
        PolicyError: the ids do not follow the grammar.
    """
    torch = importlib.import_module("torch")
    mask = CallMask(grammar_tok, tools, 0)
    rows = []
    for i, token in enumerate(completion):
        rows.append(mask.allowed())
        if not mask.matcher.consume_token(int(token)):
            raise PolicyError(f"token {i} ({token}) breaks the grammar: {mask._error()}")
    if not rows:
        return torch.zeros(0, mask.vocab_size, dtype=torch.bool)
    return torch.stack(rows)
