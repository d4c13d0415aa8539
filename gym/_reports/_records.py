"""Training records from stored episodes (held-out splits are refused by default).

`gym export RUN` writes them (``--format trl|verl`` reshape each record with
`gym.train._formats`, one layer up, through ``rows``); "export" alone is the final state
an environment takes out of the agent's sandbox (docs/architecture.md, "Names").
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from gym._core._errors import ConfigError, StoreError
from gym._core._json import dumps
from gym._envs._splits import split_use
from gym._store import EpisodeRow, StepRow, Store, TurnsRow, message_turns, user_turns

__all__ = ["episode_record", "write_records"]


def episode_record(
    e: EpisodeRow, steps: list[StepRow], verified: bool, turns: TurnsRow | None = None
) -> dict[str, Any]:
    """One training record: conversation, tools, user turns, token ids and masks, reward.

    ``turns`` is the episode's recorded tools and user turns (None: none were stored; the
    record then offers no tools and holds one user turn).
    """
    kept = turns if turns is not None else TurnsRow.empty(e.id)
    tokens = []
    for s in steps:
        if s.completion_token_ids is None:
            continue
        prompt = s.prompt_token_ids or []
        completion = s.completion_token_ids
        tokens.append(
            {
                "prompt_token_ids": prompt,
                "completion_token_ids": completion,
                "logprobs": s.logprobs,
                "loss_mask": [0] * len(prompt) + [1] * len(completion),
            }
        )
    return {
        "episode_id": e.id,
        "run_id": e.run_id,
        "env_id": e.env_id,
        "task_id": e.task_id,
        "split": e.split,
        "sample_index": e.sample_index,
        "seed": e.seed,
        "outcome": e.outcome,
        "reward": e.reward,
        "verified": verified,
        "policy": e.policy,
        "policy_params": e.policy_params,
        "policy_version": e.policy_params.get("policy_version"),
        "messages": e.messages,
        "tools": kept.tools,
        "message_turns": message_turns(e.messages, kept),
        "user_turns": [t.model_dump(mode="json") for t in user_turns(e.messages, kept, len(steps))],
        "tool_calls": [
            {"name": s.tool, "arguments": s.arguments, "turn": kept.turn_of(s.index)}
            for s in steps
            if s.tool
        ],
        "turns": tokens,
        "image_digest": e.image_digest,
        "grader_version": e.grader_version,
        "hidden_hash": e.hidden_hash,
    }


def _records(
    store: Store, run_id: str, allow_eval: bool, only_verified: bool, split: str | None = None
) -> list[dict[str, Any]]:
    with store.snapshot():  # a live run: its episodes with the verdicts and steps read
        run = store.run(run_id)
        episodes = [e for e in store.episodes(run.id) if split is None or e.split == split]
        if not allow_eval:
            _refuse_held_out(run.id, episodes)
        verdicts = store.verdicts(run.id)
        steps = store.run_steps(run.id)
        turns = store.run_turns(run.id)
    out = []
    for e in episodes:
        if e.outcome == "infra_error":
            continue  # no reward exists for these: never training data
        verified = bool(verdicts.get(e.id) and verdicts[e.id].verified)
        if only_verified and not verified:
            continue
        out.append(episode_record(e, steps.get(e.id, []), verified, turns.get(e.id)))
    return out


def _refuse_held_out(run_id: str, episodes: list[EpisodeRow]) -> None:
    """Raise `StoreError` when any of a run's episodes is of a held-out split."""
    uses = {(e.env_id, e.split): split_use(e.env_id, e.split) for e in episodes}
    held = [e for e in episodes if uses[(e.env_id, e.split)] == "held-out"]
    if held:
        splits = sorted({f"{e.env_id} {e.split}" for e in held})
        raise StoreError(
            f"run {run_id} holds {len(held)} episodes of held-out splits ({', '.join(splits)}); "
            "they are never exported for training. For training records, pass --split with "
            "a training split (--split train); --for-eval only if the records are for "
            "evaluation."
        )


def write_records(
    store: Store,
    run_id: str,
    out: Path,
    *,
    fmt: str = "jsonl",
    allow_eval: bool = False,
    only_verified: bool = False,
    split: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    rows: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None,
) -> int:
    """Write a run's records as JSONL, or as a Hugging Face ``json`` dataset folder.

    Args:
        store: the run store.
        run_id: the run (or a unique prefix).
        out: the JSONL file, or the dataset folder (``hf``).
        fmt: ``jsonl`` or ``hf``.
        allow_eval: also write episodes of held-out splits (for evaluation use only).
        only_verified: only passed episodes without flags.
        split: only episodes of this split.
        progress: called with (records written, records to write): once before the
            first, then after each.
        rows: reshapes each record into the lines written for it (a trainer's format);
            the count returned is then of lines.

    Raises:
        StoreError: the run holds held-out episodes and ``allow_eval`` is false.
    """
    if fmt not in ("jsonl", "hf"):
        raise ConfigError("--format must be jsonl or hf")
    records = _records(store, run_id, allow_eval, only_verified, split)
    if rows is not None:
        records = [line for record in records for line in rows(record)]
    target = out / "data.jsonl" if fmt == "hf" else out
    _write_lines(records, target, progress or _quiet)
    if fmt == "hf":
        with _replacing(out / "README.md") as fh:
            fh.write(_card(run_id))
    return len(records)


def _card(run_id: str) -> str:
    """The README.md of a Hugging Face dataset folder of the run's records."""
    return (
        "---\nconfigs:\n- config_name: default\n  data_files: data.jsonl\n---\n\n"
        f"# boxgym episodes of run {run_id}\n\nOne record per episode: `messages` (OpenAI "
        "chat format with tool calls), `tools` (the tool schemas the episode offered, "
        "OpenAI function format), `message_turns` (the user turn of each message) and "
        "`user_turns` (each user turn's message and step spans), `turns` (token ids, "
        "logprobs and loss masks per assistant turn), `reward`, `outcome`, `verified`. "
        "Load with "
        "`datasets.load_dataset('json', data_files='data.jsonl')`.\n"
    )


def _write_lines(
    records: list[dict[str, Any]], target: Path, say: Callable[[int, int], None]
) -> None:
    """Write one JSON line per record to a temporary file, then move it onto ``target``.

    A ``target`` that is a symbolic link is written through, as ``cp`` does: the file it
    points to is replaced (`_destination`), the link stays.

    Raises:
        OSError: ``target`` cannot be written (the error names ``target``, not the
            temporary file, which is removed).
    """
    say(0, len(records))
    with _replacing(target) as fh:
        for n, record in enumerate(records, 1):
            fh.write(dumps(record) + "\n")
            say(n, len(records))


def _destination(target: Path) -> Path:
    """The file that writing ``target`` replaces: ``target``, or the file it links to.

    A symbolic link is followed to its end, even where that file does not exist yet.
    """
    return Path(os.path.realpath(target)) if target.is_symlink() else target


@contextlib.contextmanager
def _replacing(target: Path) -> Iterator[IO[str]]:
    """A text file to write that replaces ``target``'s file whole once closed, or not at all.

    It is written as a temporary file in the folder of the file replaced (`_destination`),
    then renamed onto it: a reader sees the old file or the new one, never a part.

    Raises:
        OSError: ``target`` cannot be written (named as the user gave it; the temporary
            file is removed).
    """
    final = _destination(target)
    tmp = final.with_name(f".{final.name}.{os.getpid()}.tmp")  # beside it: no one's name
    try:
        if final == target:
            target.parent.mkdir(parents=True, exist_ok=True)
        with tmp.open("w") as fh:
            yield fh
        tmp.replace(final)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise OSError(exc.errno, exc.strerror or str(exc), str(target)) from exc


def _quiet(done: int, total: int) -> None:
    """A progress callback that says nothing."""
