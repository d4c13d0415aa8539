"""Rendering a stored trajectory as text or as one self-contained HTML page."""

from __future__ import annotations

import html
import json

from gym._store import EpisodeRow, Store

__all__ = ["episode_html", "episode_text", "resolve_episode"]


def resolve_episode(store: Store, target: str) -> EpisodeRow:
    """``RUN`` (its first episode) or ``RUN/EPISODE`` (ids or unique prefixes)."""
    run_part, _, episode_part = target.partition("/")
    run = store.run(run_part)
    if episode_part:
        return store.episode(episode_part)
    episodes = store.episodes(run.id)
    if not episodes:
        from gym._errors import StoreError

        raise StoreError(f"run {run.id} has no episodes yet")
    return episodes[0]


def _header(store: Store, e: EpisodeRow) -> list[str]:
    verdict = store.verdicts(e.run_id).get(e.id)
    lines = [
        f"episode {e.id}  run {e.run_id}",
        f"{e.env_id}  task {e.task_id} ({e.split})  sample {e.sample_index}  seed {e.seed}",
        f"outcome {e.outcome}  reward {e.reward}  end {e.end_reason}  {e.duration_s:.1f}s",
    ]
    if verdict is not None:
        lines.append(f"verdict: {verdict.reason}")
        lines += [f"  {n}: {c['explanation']}" for n, c in verdict.components.items()]
        lines += [f"  flag {f['name']}: {f['detail']}" for f in verdict.flags]
    return lines


def episode_text(store: Store, e: EpisodeRow) -> str:
    """The episode as plain text, step by step."""
    lines = _header(store, e)
    task_prompt = next((m["content"] for m in e.messages if m.get("role") == "user"), "")
    lines += ["", "--- task ---", str(task_prompt).strip()]
    for s in store.steps(e.id):
        call = f"{s.tool}({json.dumps(s.arguments)[:2000]})" if s.tool else "<no valid call>"
        lines += [
            "",
            f"--- step {s.index}: {call}  [{s.env_duration_s * 1000:.0f} ms]",
            s.observation,
        ]
    return "\n".join(lines) + "\n"


def episode_html(store: Store, e: EpisodeRow) -> str:
    """The episode as one HTML page with no external resources."""
    head = "".join(f"<div>{html.escape(line)}</div>" for line in _header(store, e))
    steps = []
    for s in store.steps(e.id):
        call = f"{s.tool}({json.dumps(s.arguments)})" if s.tool else "&lt;no valid call&gt;"
        steps.append(
            f"<details open><summary>step {s.index}: "
            f"<code>{html.escape(call[:300])}</code></summary>"
            f"<pre>{html.escape(json.dumps(s.arguments, indent=2))}</pre>"
            f"<pre class='obs'>{html.escape(s.observation)}</pre></details>"
        )
    style = (
        "body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
        "pre{background:#f4f4f4;padding:.6em;white-space:pre-wrap}"
        ".obs{background:#eef6ee}.head{background:#eef;padding:1em}"
    )
    title = html.escape(f"{e.env_id} {e.task_id} {e.outcome}")
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>"
        f"<style>{style}</style></head><body><div class='head'>{head}</div>"
        f"{''.join(steps)}</body></html>"
    )
