"""Training records in the shapes TRL and verl read (``gym export --format trl|verl``).

Each reshapes a boxgym record (`gym._reports._records.episode_record`) into the lines a
trainer reads, keeping what it trains on: the tool schemas, the conversation split at
the first assistant message, the token ids the policy really saw and sampled (joined
token-in/token-out by `episode_samples`, never re-tokenized), the mask of sampled
tokens, each sampled turn's span, the reward and the policy version. An episode whose
prefix property broke gives one line per sample (``sample`` of ``samples``); one stored
without token ids gives one line with the token fields null.

- **trl**: TRL's conversational prompt-completion type (``prompt``, ``completion``,
  ``tools``: what its trainers apply the chat template to), plus the fields its GRPO
  ``rollout_func`` returns (``prompt_ids``, ``completion_ids``, ``logprobs``,
  ``env_mask``: 1 on sampled tokens, 0 on tool/environment tokens) and ``reward``,
  which reward functions receive as a keyword argument of the same name.
- **verl**: the columns of verl's datasets (``data_source``, ``prompt`` and
  ``extra_info`` for its RL dataset (with ``env_id``, ``task`` and ``seed``, what
  boxgym's verl agent loop reads to run the task again), ``messages`` and ``tools``
  for its multi-turn SFT dataset, ``agent_name``) plus the fields of its
  ``AgentLoopOutput`` (``prompt_ids``, ``response_ids``, ``response_mask``,
  ``response_logprobs``, ``reward_score``, ``num_turns``: the assistant turns). verl
  reads parquet: convert the JSONL with pandas or ``datasets``. No ground truth is
  written (``reward_model`` is left out): hidden checks never leave boxgym; the reward
  is the verdict's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from gym._reports._records import write_records
from gym._store import Store
from gym.train._samples import Sample, TurnTokens, episode_samples

__all__ = ["FORMATS", "RecordFormat", "export_records", "trl_records", "verl_records"]

RecordFormat = Literal["trl", "verl"]
"""The trainers whose record shapes `export_records` writes."""
AGENT_NAME = "boxgym_agent"
"""The verl agent loop that runs boxgym episodes (``agent_name`` of each row)."""


def _turns(record: dict[str, Any]) -> list[TurnTokens] | None:
    """The record's token turns, or None when any lacks ids or logprobs."""
    out = []
    for turn in record["turns"]:
        if turn["logprobs"] is None or len(turn["logprobs"]) != len(turn["completion_token_ids"]):
            return None
        out.append(
            TurnTokens(
                prompt=turn["prompt_token_ids"],
                completion=turn["completion_token_ids"],
                logprobs=turn["logprobs"],
            )
        )
    return out or None


class _Tokens:
    """One sample split at its prompt: what follows is the completion (sampled and env)."""

    def __init__(self, sample: Sample, turns: list[TurnTokens]) -> None:
        start = len(turns[sample.turns[0]].prompt)
        self.prompt_ids = sample.input_ids[:start]
        self.completion_ids = sample.input_ids[start:]
        self.mask = sample.loss_mask[start:]
        self.logprobs = sample.rollout_logprobs[start:]
        self.spans = []
        for i in sample.turns:  # the prefix property: turn i's completion follows its prompt
            begin = len(turns[i].prompt) - start
            self.spans.append([begin, begin + len(turns[i].completion)])
        self.turns = sample.turns


def _samples(record: dict[str, Any]) -> list[_Tokens | None]:
    turns = _turns(record)
    if turns is None:
        return [None]
    return [_Tokens(s, turns) for s in episode_samples(turns).samples]


def _split(messages: list[dict[str, Any]]) -> int:
    """Where the completion starts: the first assistant message."""
    return next((i for i, m in enumerate(messages) if m.get("role") == "assistant"), len(messages))


def _lineage(record: dict[str, Any]) -> dict[str, Any]:
    keys = ("episode_id", "run_id", "env_id", "task_id", "split", "seed", "outcome", "verified")
    return {k: record[k] for k in keys}


def trl_records(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The record as TRL lines (see the module docstring)."""
    messages, cut = record["messages"], _split(record["messages"])
    samples = _samples(record)
    out = []
    for n, tokens in enumerate(samples):
        out.append(
            {
                "prompt": messages[:cut],
                "completion": messages[cut:],
                "tools": record["tools"],
                "reward": record["reward"],
                "policy_version": record["policy_version"],
                "prompt_ids": tokens.prompt_ids if tokens else None,
                "completion_ids": tokens.completion_ids if tokens else None,
                "logprobs": tokens.logprobs if tokens else None,
                "env_mask": tokens.mask if tokens else None,
                "turn_spans": tokens.spans if tokens else None,
                "user_turns": record["user_turns"],
                "sample": n,
                "samples": len(samples),
                **_lineage(record),
            }
        )
    return out


def verl_records(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The record as verl lines (see the module docstring)."""
    messages, cut = record["messages"], _split(record["messages"])
    samples = _samples(record)
    extra = {
        **_lineage(record),
        "task": record["task_id"],  # what gym.train._verl's agent loop reads to replay it
        "index": record["sample_index"],
        "policy_version": record["policy_version"],
        "user_turns": record["user_turns"],
        "tools_kwargs": {},
    }
    out = []
    for n, tokens in enumerate(samples):
        out.append(
            {
                "data_source": record["env_id"],
                "agent_name": AGENT_NAME,
                "prompt": messages[:cut],
                "messages": messages,
                "tools": record["tools"],
                "extra_info": {**extra, "sample": n, "samples": len(samples)},
                "prompt_ids": tokens.prompt_ids if tokens else None,
                "response_ids": tokens.completion_ids if tokens else None,
                "response_mask": tokens.mask if tokens else None,
                "response_logprobs": tokens.logprobs if tokens else None,
                "turn_spans": tokens.spans if tokens else None,
                "reward_score": record["reward"],
                "num_turns": len(tokens.turns) if tokens else len(record["turns"]),
            }
        )
    return out


FORMATS: dict[str, Callable[[dict[str, Any]], list[dict[str, Any]]]] = {
    "trl": trl_records,
    "verl": verl_records,
}


def export_records(
    store: Store,
    run_id: str,
    out: Path,
    *,
    fmt: RecordFormat,
    **options: Any,
) -> int:
    """Write a run's records in a trainer's shape as JSONL; the lines written.

    Args:
        store: the run store.
        run_id: the run (or a unique prefix).
        out: the JSONL file.
        fmt: ``trl`` or ``verl``.
        **options: `write_records`'s (``allow_eval``, ``only_verified``, ``split``,
            ``progress``).
    """
    return write_records(store, run_id, out, fmt="jsonl", rows=FORMATS[fmt], **options)
