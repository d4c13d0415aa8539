"""A tiny policy built in code: a two-layer Llama of about half a million parameters.

Nothing is downloaded or shipped: the tokenizer is a byte-level BPE trained in a few
milliseconds on a fixed corpus of the tool-call format and tool-schema text (every byte
stays representable, so any observation tokenizes and the grammar can write any JSON
string), with a ChatML chat template; the model is a transformers ``LlamaForCausalLM``
from a small config, initialised from a seed. It runs through `LocalPolicy`, so it
renders prompts, constrains decoding and records token ids and logprobs the same way,
and it trains in plain torch on a CPU in seconds per step.

    gym run ENV --policy tiny                # an untrained tiny model (always valid calls)
    TinyPolicy(model="path/to/checkpoint")   # one saved with `save_tiny`

torch and transformers are imported only inside these functions.
"""

from __future__ import annotations

import functools
import importlib
import threading
import time
from pathlib import Path
from typing import Any

from gym._policy._local import LocalModel, LocalPolicy, _backend, load_model
from gym._policy._parse import format_call, tools_prompt

__all__ = ["TINY", "TinyPolicy", "build_tiny", "save_tiny", "tiny_config", "tiny_tokenizer"]

TINY = "tiny"
"""The model name that builds a fresh tiny model instead of loading one."""

SPECIAL_TOKENS = ["<|pad|>", "<|im_start|>", "<|im_end|>"]
"""Padding, turn start and end of turn (the end-of-sequence token)."""

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
"""ChatML, as SmolLM2 writes it (without its default system message)."""

VOCAB_SIZE = 512
"""Byte alphabet (256) + special tokens + merges learnt from the corpus."""

_TOOLS = [
    ("bash", {"command": "string"}),
    ("read_file", {"path": "string"}),
    ("write_file", {"path": "string", "content": "string"}),
    ("sql", {"query": "string"}),
    ("answer", {"value": "integer"}),
    ("submit", {}),
]
_WORDS = (
    "You are an autonomous agent working inside a Linux container. Use the tools to "
    "inspect and change the environment, one tool call per turn. When the task is done, "
    "call submit. Error: unknown tool. The task: compute the answer and submit it. "
    "system user assistant tool_response true false null 0 1 2 3 4 5 6 7 8 9 10"
)


def _corpus() -> list[str]:
    """Fixed text the tokenizer's merges are learnt from (the format and schema words)."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": f"The {name} tool.",
                "parameters": {
                    "type": "object",
                    "properties": {k: {"type": t} for k, t in args.items()},
                    "required": list(args),
                    "additionalProperties": False,
                },
            },
        }
        for name, args in _TOOLS
    ]
    calls = [format_call(name, {k: "ls" for k in args}) for name, args in _TOOLS]
    return [tools_prompt(tools), *calls, _WORDS] * 4


@functools.lru_cache(maxsize=1)
def _tokenizer_json() -> str:
    tokenizers = importlib.import_module("tokenizers")
    pre, dec = tokenizers.pre_tokenizers, tokenizers.decoders
    tok = tokenizers.Tokenizer(tokenizers.models.BPE())
    tok.pre_tokenizer = pre.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = dec.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    return str(tok.to_str())


def tiny_tokenizer() -> Any:
    """The tiny policy's tokenizer (a transformers fast tokenizer with a chat template)."""
    _, transformers = _backend()
    tokenizers = importlib.import_module("tokenizers")
    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizers.Tokenizer.from_str(_tokenizer_json()),
        eos_token="<|im_end|>",
        pad_token="<|pad|>",
    )
    tok.chat_template = CHAT_TEMPLATE
    return tok


def tiny_config(tokenizer: Any, **overrides: Any) -> Any:
    """The tiny model's ``LlamaConfig``: 2 layers, width 128, 4 heads, 4096 positions.

    Args:
        tokenizer: from `tiny_tokenizer` (gives the vocabulary and special ids).
        **overrides: any LlamaConfig field (e.g. ``num_hidden_layers=4``).
    """
    _, transformers = _backend()
    settings: dict[str, Any] = {
        "vocab_size": len(tokenizer),
        "hidden_size": 128,
        "intermediate_size": 384,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "max_position_embeddings": 4096,
        "tie_word_embeddings": True,
        "bos_token_id": None,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
        "architectures": ["LlamaForCausalLM"],
    }
    return transformers.LlamaConfig(**{**settings, **overrides})


def build_tiny(seed: int = 0, **overrides: Any) -> LocalModel:
    """A fresh tiny model (weights drawn from ``seed``) with its tokenizer.

    Args:
        seed: the seed of the weight initialisation.
        **overrides: config fields (see `tiny_config`).
    """
    torch, transformers = _backend()
    start = time.monotonic()
    tokenizer = tiny_tokenizer()
    config = tiny_config(tokenizer, **overrides)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = transformers.LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.eval()
    return LocalModel(Path(TINY), model, tokenizer, time.monotonic() - start, threading.Lock())


def save_tiny(loaded: LocalModel, folder: str | Path) -> Path:
    """Save a tiny model and its tokenizer as a Hugging Face folder (a checkpoint).

    Args:
        loaded: the model to save (e.g. a trained one).
        folder: where; `TinyPolicy` (or `LocalPolicy`) loads it back by this path.
    """
    path = Path(folder)
    loaded.model.save_pretrained(path)
    loaded.tokenizer.save_pretrained(path)
    return path


class TinyPolicy(LocalPolicy):
    """`LocalPolicy` over the tiny model: constrained decoding, token ids and logprobs.

    Args:
        model: ``tiny`` for a fresh model, or a folder saved by `save_tiny`.
        max_new_tokens: the most tokens one turn may generate.
        temperature: 0 for greedy decoding, else the sampling temperature (1.0 for RL).
        top_p: nucleus sampling mass (with a temperature).
        seed: base seed of sampling.
        threads: torch's thread count (process-wide); None leaves it as is.
        constrained: constrain decoding to a valid call of an offered tool.
        init_seed: the seed of a fresh model's weights.
    """

    name = "tiny"

    def __init__(
        self,
        model: str = TINY,
        *,
        max_new_tokens: int = 512,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int = 0,
        threads: int | None = 1,
        constrained: bool = True,
        init_seed: int = 0,
    ) -> None:
        super().__init__(
            model,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            top_p=top_p,
            seed=seed,
            threads=threads,
            constrained=constrained,
            prime=False,
        )
        self.init_seed = init_seed

    def params(self) -> dict[str, Any]:
        """Model and sampling settings (with the weights' seed of a fresh model)."""
        return {**super().params(), "init_seed": self.init_seed}

    def load(self) -> LocalModel:
        """The model: built from the seed (``tiny``) or loaded from a folder."""
        if self._loaded is None:
            if self.model == TINY:
                torch, _ = _backend()
                if self.threads is not None:
                    torch.set_num_threads(self.threads)
                self._loaded = build_tiny(self.init_seed)
            else:
                self._loaded = load_model(self.model, threads=self.threads)
        return self._loaded
