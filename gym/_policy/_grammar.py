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

Given the turn's token budget, the mask also guarantees that the call closes within it:
the grammar keeps every prefix valid but cannot make a degenerate repetition end (a
small model writing ``1000000...`` inside a string until the budget cuts the call). So
a budget keeps a reserve back, the longest of the offered tools' shortest complete
turns (`closing_reserve`) plus a margin for an open value; while more tokens than the
reserve remain the model writes freely, and once it reaches the reserve the mask allows
exactly one token per step: the shortest way from where the call stands to its end,
found by walking the grammar (`closing_tokens`: close the open string, the open
lists and objects, give each missing required argument its shortest value, then the
closing tag and the end-of-turn token). A forced token is one the sampler drew from a
distribution with all its mass on that token, so its recorded logprob is exactly 0 and
the recorded tokens are still what was sampled; `allowed_tokens` replays the same masks
from the same budget. The reserve is proven to suffice for flat tool arguments
(strings, numbers, booleans, enums and lists of those, which is every boxgym tool); a
schema with large nested objects under optional properties could need more than the
margin, and such a turn is cut by the budget as before.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from typing import Any

from gym._core._errors import ConfigError, PolicyError

__all__ = [
    "CallMask",
    "allowed_tokens",
    "call_grammar",
    "call_schema",
    "closing_reserve",
    "closing_tokens",
    "grammar_tokenizer",
]

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


MARGIN = 8
"""Tokens the reserve keeps beyond the shortest call: an open string, escape or list."""

_CLOSE_LIMIT = 512
"""The most tokens `closing_tokens` walks before it gives up (a grammar it cannot close)."""


@dataclass(frozen=True)
class _Alphabet:
    """What the closing walk needs to know of a tokenizer's tokens."""

    lengths: Any
    """Each token's length in bytes, a tensor [V] (specials and empties count as long)."""
    letter: int
    """The single-byte token ``a``: allowed only inside a string, never in JSON syntax."""
    quote: int
    """The single-byte token for a double quote."""
    closers: tuple[int, ...]
    """Single-byte tokens that end a value outside strings, most closing first."""


_alphabets: dict[int, tuple[Any, _Alphabet]] = {}
_reserves: dict[tuple[int, str], int] = {}


def _alphabet(grammar_tok: Any) -> _Alphabet:
    """The closing walk's view of a tokenizer (built once per tokenizer: a few 10 ms)."""
    cached = _alphabets.get(id(grammar_tok))
    if cached is not None and cached[0] is grammar_tok:
        return cached[1]
    torch = importlib.import_module("torch")
    size = int(grammar_tok.vocab_size)
    lengths = [len(grammar_tok.decode_bytes([t])) or size for t in range(size)]
    for t in range(size):
        if grammar_tok.is_special_token(t):
            lengths[t] = size
    one = [_byte_token(grammar_tok, b) for b in (b"a", b'"', b"}", b"]", b",", b"0")]
    alphabet = _Alphabet(torch.tensor(lengths), one[0], one[1], tuple(one[2:]))
    _alphabets[id(grammar_tok)] = (grammar_tok, alphabet)
    return alphabet


def _byte_token(grammar_tok: Any, text: bytes) -> int:
    ids = grammar_tok.tokenize_bytes(text)
    if len(ids) != 1:
        raise ConfigError(f"the tokenizer has no single token for {text!r}: it is not byte-level")
    return int(ids[0])


def _allowed(matcher: Any, vocab_size: int) -> Any:
    """The grammar's bitmask as a boolean tensor over the vocabulary."""
    torch = importlib.import_module("torch")
    words = torch.frombuffer(bytearray(matcher.compute_bitmask()), dtype=torch.uint8)
    bits = (words[:, None] >> torch.arange(8, dtype=torch.uint8)) & 1
    return bits.reshape(-1)[:vocab_size].bool()


def _closing_step(matcher: Any, alphabet: _Alphabet) -> int:
    """The token that takes the call closest to its end from where it stands.

    Inside a string (where a letter may follow) the quote that ends it; elsewhere the
    first allowed of ``}``, ``]``, ``"``, ``,``, ``0``; failing those (an enum's letters,
    a string's pattern) the shortest allowed token.
    """
    allowed = _allowed(matcher, alphabet.lengths.numel())
    prefer = (alphabet.quote,) if allowed[alphabet.letter] else alphabet.closers
    for token in prefer:
        if allowed[token]:
            return token
    lengths = alphabet.lengths.masked_fill(~allowed, 1 << 30)
    return int(lengths.argmin())


def closing_tokens(matcher: Any, grammar_tok: Any) -> list[int] | None:
    """The tokens that end the call from where ``matcher`` stands, to its closing tag.

    Walks a copy of the matcher: the bytes the grammar forces as its own tokens, and
    at each choice the most closing token (`_closing_step`). Short, not provably the
    shortest; deterministic, so a replay forces the same tokens. The end-of-turn token
    is not in the list: once the tag is written it is the only token the grammar allows.

    Args:
        matcher: an llguidance matcher of the call grammar (left unchanged).
        grammar_tok: the tokenizer it was built with.

    Returns:
        The tokens, or None when the walk found no end within 512 tokens.
    """
    alphabet = _alphabet(grammar_tok)
    walk = matcher.deep_copy()
    path: list[int] = []
    while not walk.is_stopped() and len(path) <= _CLOSE_LIMIT:
        step = walk.compute_ff_tokens() or [_closing_step(walk, alphabet)]
        if not walk.consume_tokens(step):
            return None
        path.extend(step)
    return path if walk.is_stopped() and not walk.is_error() else None


def closing_reserve(grammar_tok: Any, tools: list[dict[str, Any]]) -> int | None:
    """Tokens a turn keeps back so that its call always closes (cached per tool set).

    The longest of the tools' shortest complete turns (each tool's call with its
    required arguments at their shortest values and its closing tag, then the
    end-of-turn token) plus `MARGIN`. From any point inside a call of tool X, the way
    to its end is at most X's shortest turn (whose opening the call has already
    written) plus the rest of an open value, which the margin covers for flat
    arguments.

    Args:
        grammar_tok: from `grammar_tokenizer`.
        tools: the offered tools.

    Returns:
        The reserve, or None when some tool's call could not be closed by the walk.
    """
    key = (id(grammar_tok), json.dumps(tools, sort_keys=True))
    if key not in _reserves:
        llg = _llguidance()
        lengths = []
        for tool in tools:
            path = closing_tokens(llg.LLMatcher(grammar_tok, call_grammar([tool])), grammar_tok)
            if path is None:
                return None
            lengths.append(len(path) + 1)  # and the end-of-turn token
        _reserves[key] = max(lengths) + MARGIN
    return _reserves[key]


class CallMask:
    """Masks the scores of tokens the tool-call grammar forbids (a logits processor).

    One instance serves one generation: it follows the tokens ``generate`` appends
    after the prompt. Forbidden tokens get ``-inf``, so the scores ``generate``
    returns with ``output_scores`` are the constrained distribution the sampler drew
    from. With a ``budget``, once no more than the reserve (`closing_reserve`) is
    left, only the next token of the call's closing (`closing_tokens`) is allowed,
    so the call ends within the budget.

    Args:
        grammar_tok: from `grammar_tokenizer`.
        tools: the offered tools.
        prompt_len: how many tokens the prompt has.
        budget: the most tokens this generation may sample; None sets no bound.
    """

    def __init__(
        self,
        grammar_tok: Any,
        tools: list[dict[str, Any]],
        prompt_len: int,
        budget: int | None = None,
    ) -> None:
        llg = _llguidance()
        self.matcher = llg.LLMatcher(grammar_tok, call_grammar(tools))
        if self.matcher.is_error():
            raise ConfigError(f"the tools' schemas give no usable grammar: {self._error()}")
        self.grammar_tok = grammar_tok
        self.prompt_len = prompt_len
        self.seen = prompt_len
        self.vocab_size = int(grammar_tok.vocab_size)
        self.budget = budget
        self.reserve = closing_reserve(grammar_tok, tools) if budget is not None else None
        self.sampled = 0
        self.forced: list[int] | None = None
        """The closing still to write, once the budget forced it (None before)."""

    def _error(self) -> str:
        return str(self.matcher.get_error())

    def consume(self, token: int) -> None:
        """Advance the grammar over one sampled token.

        Raises:
            PolicyError: the token breaks the grammar (or is not the forced one).
        """
        if self.forced and self.forced.pop(0) != token:
            raise PolicyError(f"the sampled token {token} is not the closing the budget forced")
        if not self.matcher.consume_token(token):
            raise PolicyError(f"the sampled token {token} breaks the grammar: {self._error()}")
        self.sampled += 1

    def _closing(self) -> list[int] | None:
        """The forced closing, computed when the next free token would eat the reserve."""
        if self.forced is None and self.reserve is not None and self.budget is not None:
            if self.budget - self.sampled - 1 < self.reserve:
                self.forced = closing_tokens(self.matcher, self.grammar_tok) or []
        return self.forced

    def allowed(self) -> Any:
        """A boolean tensor over the vocabulary: the tokens the grammar allows next."""
        forced = self._closing()
        if forced:
            torch = importlib.import_module("torch")
            only = torch.zeros(self.vocab_size, dtype=torch.bool)
            only[forced[0]] = True
            return only
        return _allowed(self.matcher, self.vocab_size)

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        """Consume the token sampled last, then mask what may not follow it."""
        for token in input_ids[0, self.seen :].tolist():
            self.consume(int(token))
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


def allowed_tokens(
    grammar_tok: Any,
    tools: list[dict[str, Any]],
    completion: list[int],
    budget: int | None = None,
) -> Any:
    """The tokens the grammar allowed at each step of a completion, [len(completion), V].

    Replays the grammar over sampled ids: a trainer that computes its log-probabilities
    under the same mask (`gym.train.token_logprobs` with ``allowed=``) optimises the
    policy that actually acted, whose logprobs the constrained policies record.

    Args:
        grammar_tok: from `grammar_tokenizer`.
        tools: the tools offered at that turn.
        completion: the sampled ids (the end-of-turn token included).
        budget: the turn's token budget, as the policy gave it to `CallMask`
            (`gym._policy._local.LocalPolicy.turn_budget`), so the forced closing replays.

    Raises:
        PolicyError: the ids do not follow the grammar.
    """
    torch = importlib.import_module("torch")
    mask = CallMask(grammar_tok, tools, 0, budget)
    rows = []
    for i, token in enumerate(completion):
        rows.append(mask.allowed())
        try:
            mask.consume(int(token))
        except PolicyError as exc:
            raise PolicyError(f"token {i}: {exc}") from None
    if not rows:
        return torch.zeros(0, mask.vocab_size, dtype=torch.bool)
    return torch.stack(rows)
