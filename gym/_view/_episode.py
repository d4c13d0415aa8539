"""One episode for people: the task, every turn, the verdict and the final state."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from gym._core._errors import StoreError
from gym._store import EpisodeRow, RunRow, StepRow, Store, VerdictRow
from gym._view._links import episode_page, raw_page, run_page
from gym._view._state import FinalState, final_state, state_text
from gym._view._text import Snippet, display, snippet

__all__ = ["EpisodePage", "FlagView", "TurnView", "episode_view", "raw_text"]


class FlagView(BaseModel):
    """A flag of the verdict, with the step that caused it where it can be found."""

    name: str
    detail: Snippet
    gating: bool
    step: int | None = None
    """The first step whose call or text contains the flag's detail (or a path in it)."""


class ComponentView(BaseModel):
    """A scored part of the verdict."""

    name: str
    score: float | None
    passed: bool
    gated: bool
    weight: float | None
    explanation: Snippet


class TurnView(BaseModel):
    """One assistant turn and what the environment did with it."""

    index: int
    """Step index (the turn's position in the episode)."""
    text: Snippet
    """What the assistant wrote."""
    reasoning: Snippet | None = None
    """Reasoning the server returned with the message, when it was stored."""
    tool: str = ""
    """Tool called ('' when the turn held no valid call)."""
    arguments: list[tuple[str, Snippet]] = Field(default_factory=list)
    raw_call: Snippet | None = None
    """A call that was not valid, as the model wrote it: its tool name and the raw text
    of its arguments (None when the turn's call was valid, or the model wrote none)."""
    observation: Snippet | None = None
    """What the environment answered (None for a turn that reached no step)."""
    error: str = ""
    exit_code: int | None = None
    timed_out: bool = False
    env_ms: float = 0.0
    policy_ms: float = 0.0
    retries: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    flags: list[str] = Field(default_factory=list)
    """Flags traced to this step."""


class EpisodePage(BaseModel):
    """Everything the episode page shows."""

    episode: EpisodeRow
    run: RunRow
    run_href: str
    prev_href: str = ""
    next_href: str = ""
    system: Snippet
    prompt: Snippet
    turns: list[TurnView]
    verdict: VerdictRow | None
    components: list[ComponentView]
    flags: list[FlagView]
    state: FinalState
    raw_diff: str
    """Link to the whole final-state diff."""

    def raw_links(self) -> set[str]:
        """The raw pages this page links to (texts that were cut)."""
        snippets = [self.system, self.prompt]
        for t in self.turns:
            snippets += [t.text, *(s for _, s in t.arguments)]
            snippets += [s for s in (t.reasoning, t.observation, t.raw_call) if s is not None]
        if self.state.export is not None:
            snippets.append(self.state.export)
        links = {s.raw for s in snippets if s.raw}
        if self.state.more_lines:
            links.add(self.raw_diff)
        return links


def _reasoning(message: dict[str, Any]) -> str:
    for key in ("reasoning", "reasoning_content"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _first(messages: Sequence[dict[str, Any]], role: str) -> str:
    return next((display(m.get("content")) for m in messages if m.get("role") == role), "")


def written_call(message: dict[str, Any]) -> str:
    """The first tool call of a message as the model wrote it, or '' when it holds none.

    Its tool name, a space, then the raw text of its arguments (not parsed: an invalid
    call is shown as it came).
    """
    calls = message.get("tool_calls")
    call = calls[0] if isinstance(calls, list) and calls else None
    fn = call.get("function") if isinstance(call, dict) else None
    if not isinstance(fn, dict):
        return ""
    args = fn.get("arguments")
    return f"{fn.get('name', '')} {args if isinstance(args, str) else display(args)}"


def _arguments(eid: str, step: StepRow) -> list[tuple[str, Snippet]]:
    raw = raw_page(eid, f"step-{step.index}-call")
    return [(str(k), snippet(display(v), raw)) for k, v in step.arguments.items()]


def _turn(eid: str, i: int, message: dict[str, Any], step: StepRow | None) -> TurnView:
    text = snippet(display(message.get("content") or ""), raw_page(eid, f"step-{i}-text"))
    reasoning = _reasoning(message)
    turn = TurnView(
        index=i,
        text=text,
        reasoning=snippet(reasoning, raw_page(eid, f"step-{i}-reasoning")) if reasoning else None,
    )
    if step is None:
        return turn
    written = "" if step.tool else written_call(message)
    return turn.model_copy(
        update={
            "tool": step.tool,
            "arguments": _arguments(eid, step),
            "raw_call": snippet(written, raw_page(eid, f"step-{i}-call")) if written else None,
            "observation": snippet(step.observation, raw_page(eid, f"step-{i}-observation")),
            "error": step.error,
            "exit_code": step.exit_code,
            "timed_out": step.timed_out,
            "env_ms": step.env_duration_s * 1000,
            "policy_ms": step.policy_latency_s * 1000,
            "retries": step.retries,
            "prompt_tokens": len(step.prompt_token_ids) if step.prompt_token_ids else None,
            "completion_tokens": (
                len(step.completion_token_ids) if step.completion_token_ids else None
            ),
        }
    )


def _turns(e: EpisodeRow, steps: list[StepRow]) -> list[TurnView]:
    """The i-th assistant message with the i-th step (each turn makes one step)."""
    said = [m for m in e.messages if m.get("role") == "assistant"]
    turns = [_turn(e.id, i, m, steps[i] if i < len(steps) else None) for i, m in enumerate(said)]
    for step in steps[len(said) :]:  # steps with no stored message (never expected)
        turns.append(_turn(e.id, step.index, {}, step))
    return turns


def _needles(detail: str) -> list[str]:
    paths = [t for t in re.split(r"[\s:,()]+", detail) if len(t) >= 3 and ("/" in t or "." in t)]
    return [n for n in (detail.strip(), *paths) if n]


def flag_step(detail: str, steps: Sequence[StepRow], said: Sequence[str]) -> int | None:
    """The first step whose call arguments (or else assistant text) contain the detail.

    The detail itself is tried first, then each path-like word in it (``modified
    tests/test_x.py`` is found in the write that named ``tests/test_x.py``).
    """
    for needle in _needles(detail):
        for s in steps:
            if any(isinstance(v, str) and needle in v for v in s.arguments.values()):
                return s.index
        for i, text in enumerate(said):
            if needle in text:
                return i
    return None


def _flags(
    verdict: VerdictRow | None, steps: list[StepRow], turns: list[TurnView]
) -> list[FlagView]:
    if verdict is None:
        return []
    said = [t.text.text for t in turns]
    out = []
    for f in verdict.flags:
        detail = str(f.get("detail", ""))
        out.append(
            FlagView(
                name=str(f.get("name", "")),
                detail=snippet(detail, max_chars=2000),
                gating=bool(f.get("gating", True)),
                step=flag_step(detail, steps, said) if detail else None,
            )
        )
    return out


def _components(verdict: VerdictRow | None) -> list[ComponentView]:
    if verdict is None:
        return []
    return [
        ComponentView(
            name=name,
            score=c.get("score"),
            passed=bool(c.get("passed")),
            gated=bool(c.get("gated", True)),
            weight=c.get("weight"),
            explanation=snippet(str(c.get("explanation", "")), max_chars=4000),
        )
        for name, c in verdict.components.items()
    ]


def _neighbours(store: Store, e: EpisodeRow) -> tuple[str, str]:
    ids = [x.id for x in store.episodes(e.run_id)]
    at = ids.index(e.id)
    prev = episode_page(ids[at - 1]) if at > 0 else ""
    nxt = episode_page(ids[at + 1]) if at + 1 < len(ids) else ""
    return prev, nxt


def _episode(store: Store, episode_id: str) -> EpisodeRow:
    e = store.episode(episode_id)
    if e.id != episode_id:
        raise StoreError(f"no episode {episode_id!r}")
    return e


def episode_view(store: Store, episode_id: str) -> EpisodePage:
    """The episode page's data for an episode id (exact)."""
    e = _episode(store, episode_id)
    steps = store.steps(e.id)
    verdict = store.verdicts(e.run_id).get(e.id)
    turns = _turns(e, steps)
    flags = _flags(verdict, steps, turns)
    for f in flags:
        if f.step is not None and f.step < len(turns):
            turns[f.step].flags.append(f.name)
    prev, nxt = _neighbours(store, e)
    return EpisodePage(
        episode=e,
        run=store.run(e.run_id),
        run_href=run_page(e.run_id),
        prev_href=prev,
        next_href=nxt,
        system=snippet(_first(e.messages, "system"), raw_page(e.id, "system")),
        prompt=snippet(_first(e.messages, "user"), raw_page(e.id, "prompt")),
        turns=turns,
        verdict=verdict,
        components=_components(verdict),
        flags=flags,
        state=final_state(e.env_id, e.task_id, e.export, raw_page(e.id, "diff")),
        raw_diff=raw_page(e.id, "diff"),
    )


def _step_text(e: EpisodeRow, steps: list[StepRow], index: int, part: str) -> str:
    said = [m for m in e.messages if m.get("role") == "assistant"]
    step = next((s for s in steps if s.index == index), None)
    if part == "text" and index < len(said):
        return display(said[index].get("content") or "")
    if part == "reasoning" and index < len(said):
        return _reasoning(said[index])
    if part == "observation" and step is not None:
        return step.observation
    if part == "call" and step is not None and not step.tool and index < len(said):
        return written_call(said[index])
    if part == "call" and step is not None:
        return json.dumps(
            {"name": step.tool, "arguments": step.arguments}, indent=2, ensure_ascii=False
        )
    raise StoreError(f"episode {e.id} has no {part} at step {index}")


def raw_text(store: Store, episode_id: str, name: str) -> str:
    """One whole text of an episode by its raw page name (see `gym._view._links`).

    Raises:
        StoreError: no such episode or text.
    """
    e = _episode(store, episode_id)
    if name in ("prompt", "system"):
        return _first(e.messages, "user" if name == "prompt" else "system")
    if name == "diff":
        return state_text(e.env_id, e.task_id, e.export)
    match = re.fullmatch(r"step-(\d+)-(text|reasoning|observation|call)", name)
    if match is None:
        raise StoreError(f"episode {e.id} has no text named {name!r}")
    return _step_text(e, store.steps(e.id), int(match.group(1)), match.group(2))
