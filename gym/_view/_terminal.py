"""A stored episode as plain text for a terminal, and a run's episodes as rows."""

from __future__ import annotations

import json
from typing import Any

from gym._core._errors import StoreError
from gym._store import EpisodeRow, Store, said_by_step
from gym._view._text import clean, display

__all__ = ["episode_text", "resolve_episode"]


def resolve_episode(store: Store, target: str) -> EpisodeRow:
    """``RUN`` (its first episode) or ``RUN/EPISODE`` (ids or unique prefixes).

    The episode prefix is looked up among the run's episodes only.

    Raises:
        StoreError: no such run, or no episode (or several) of the run match.
    """
    run_part, _, episode_part = target.partition("/")
    run = store.run(run_part)
    if episode_part:
        return store.episode(episode_part, run_id=run.id)
    episodes = store.episodes(run.id)
    if not episodes:
        raise StoreError(f"run {run.id} has no episodes yet")
    return episodes[0]


def _header(store: Store, e: EpisodeRow) -> list[str]:
    verdict = store.verdicts(e.run_id).get(e.id)
    lines = [
        f"episode {e.id}  run {e.run_id}",
        f"{e.env_id}  task {e.task_id} ({e.split})  sample {e.sample_index}  seed {e.seed}",
        f"outcome {e.outcome}  reward {e.reward}  end {e.end_reason}  {e.duration_s:.1f}s",
        f"tokens {e.prompt_tokens} in, {e.completion_tokens} out  policy {e.policy_latency_s:.1f}s",
    ]
    if verdict is not None:
        lines.append(f"verdict: {verdict.reason}")
        lines += [f"  {n}: {c.get('explanation', '')}" for n, c in verdict.components.items()]
        lines += [f"  flag {f.get('name')}: {f.get('detail', '')}" for f in verdict.flags]
    return lines


def _cut(text: str, limit: int = 4000) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n... ({len(text) - limit} more characters: the viewer shows them all)"


def episode_text(store: Store, e: EpisodeRow) -> str:
    """The episode as plain text, turn by turn (terminal escapes in model output removed).

    A user turn after the first opens with a separator and the user's message; the text
    of an assistant message that made several calls is shown with its first.
    """
    lines = _header(store, e)
    prompt = next((m.get("content") for m in e.messages if m.get("role") == "user"), "")
    lines += ["", "--- task ---", display(prompt or "").strip()]
    kept = store.turns(e.id)
    if kept.tools:
        lines.append("tools: " + ", ".join(_tool_names(kept.tools)))
    users = {end.turn + 1: end.user for end in kept.turn_ends() if end.user is not None}
    said = [m for m in e.messages if m.get("role") == "assistant"]
    made = said_by_step(e.messages, kept)
    turn = 0
    for s in store.steps(e.id):
        n = made[s.index] if s.index < len(made) else s.index
        first = s.index == 0 or s.index >= len(made) or made[s.index - 1] != n
        if kept.turn_of(s.index) > turn:
            turn = kept.turn_of(s.index)
            lines += ["", f"=== user turn {turn} ===", _cut(users.get(turn, "").strip())]
        text = display(said[n].get("content") or "") if first and n < len(said) else ""
        call = f"{s.tool}({json.dumps(s.arguments)[:2000]})" if s.tool else "<no valid call>"
        lines += ["", f"--- step {s.index}: {call}  [{s.env_duration_s * 1000:.0f} ms]"]
        lines += [f"assistant: {_cut(text.strip())}"] if text.strip() else []
        lines.append(_cut(s.observation))
    for later in sorted(t for t in users if t > turn):  # opened after the last step
        lines += ["", f"=== user turn {later} ===", _cut(users[later].strip())]
    return clean("\n".join(lines)) + "\n"


def _tool_names(tools: list[dict[str, Any]]) -> list[str]:
    """The names of OpenAI function schemas (or bare ones)."""
    names = []
    for schema in tools:
        fn = schema.get("function", schema)
        names.append(str(fn.get("name", "?")) if isinstance(fn, dict) else "?")
    return names
