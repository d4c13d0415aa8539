"""One episode for people: the task, every turn, the verdict and the final state.

A forked episode (`env.fork`) also shows where it comes from (its parent episode, the
step it was forked at, its branch index) and any episode shows the branches forked from
it: a small tree, one row per branch with its fork step, outcome and reward, and how
many branches it has of its own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from gym._core._errors import StoreError
from gym._store import EpisodeRow, RunRow, StepRow, Store, TurnsRow, VerdictRow, said_by_step
from gym._store._lineage import LineageRow
from gym._view._links import episode_page, raw_page, run_page
from gym._view._state import FinalState, final_state, state_text
from gym._view._text import Snippet, display, snippet

__all__ = [
    "BranchView",
    "EpisodePage",
    "ForkView",
    "FlagView",
    "ToolView",
    "TurnView",
    "UserTurnView",
    "episode_view",
    "raw_text",
]


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


class UserTurnView(BaseModel):
    """The start of a user turn after the first: the user's message."""

    turn: int
    """The turn's index (0 is the task prompt's)."""
    message: Snippet
    """What the user said."""


class ToolView(BaseModel):
    """A tool the episode offered, with its schema."""

    name: str
    kind: str = ""
    """``read``, ``write`` or ``final`` when the schema says (``x-boxgym-kind``)."""
    description: Snippet
    definition: Snippet
    """The whole schema, as indented JSON."""


class TurnView(BaseModel):
    """One assistant turn and what the environment did with it."""

    index: int
    """Step index (the turn's position in the episode)."""
    turn: int = 0
    """The user turn it belongs to."""
    opens: UserTurnView | None = None
    """The user turn this step is the first of (turns after the first), with its message."""
    turn_end: bool = False
    """This step ended its user turn (the final tool)."""
    call: int = 0
    """Which call of its assistant message this step made (parallel calls), from 0."""
    calls: int = 1
    """How many steps its assistant message made."""
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


class ForkView(BaseModel):
    """Where a forked episode comes from."""

    parent_id: str
    """The episode it was forked from."""
    parent_href: str
    """Link to the parent's page at the fork step ('' when the parent is not stored)."""
    fork_step: int
    """Steps it shares with its parent: its first own step has this index."""
    branch: int
    """Its index among the branches of its fork."""
    parent_task: str = ""
    """The parent's task id ('' when it is not stored)."""


class BranchView(BaseModel):
    """One episode forked from this one."""

    episode_id: str
    href: str
    """Link to the branch's page ('' when it is not stored)."""
    fork_step: int
    branch: int
    outcome: str = ""
    """Its outcome ('' when it is not stored)."""
    reward: float | None = None
    branches: int = 0
    """How many branches were forked from it in turn."""


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
    later_turns: list[UserTurnView] = Field(default_factory=list)
    """User turns opened after the last step (the episode ended before the agent acted)."""
    user_turns: int = 1
    """How many user turns the episode held."""
    tools: list[ToolView] = Field(default_factory=list)
    """The tools the episode offered (none for an episode stored without them)."""
    user_transcript: Snippet | None = None
    """A simulated user's recorded transcript, as JSON (None for scripted turns)."""
    verdict: VerdictRow | None
    components: list[ComponentView]
    flags: list[FlagView]
    state: FinalState
    raw_diff: str
    """Link to the whole final-state diff."""
    forked_from: ForkView | None = None
    """Its parent and fork step, for a forked episode (None: it began at a reset)."""
    branches: list[BranchView] = Field(default_factory=list)
    """The episodes forked from it, by fork step and branch index."""

    def raw_links(self) -> set[str]:
        """The raw pages this page links to (texts that were cut)."""
        snippets = [self.system, self.prompt, *(t.definition for t in self.tools)]
        snippets += [u.message for u in self.later_turns]
        if self.user_transcript is not None:
            snippets.append(self.user_transcript)
        for t in self.turns:
            snippets += [t.text, *(s for _, s in t.arguments)]
            snippets += [s for s in (t.reasoning, t.observation, t.raw_call) if s is not None]
            snippets += [t.opens.message] if t.opens is not None else []
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


class _Placed(BaseModel):
    """A step (or an assistant message that made none) with the message that made it."""

    index: int
    message: dict[str, Any]
    step: StepRow | None
    call: int = 0
    calls: int = 1


def _placed(e: EpisodeRow, steps: list[StepRow], kept: TurnsRow) -> list[_Placed]:
    """Each step with its assistant message, in order; a message that made no step alone.

    Several calls of one message are several steps of it; a message that made no step
    (the episode ended before) is numbered after the last step.
    """
    said = [m for m in e.messages if m.get("role") == "assistant"]
    made = said_by_step(e.messages, kept)
    of_message: dict[int, list[StepRow]] = {}
    for k, step in enumerate(steps):  # a step with no stored answer follows the last one
        n = made[k] if k < len(made) else (made[-1] if made else -1) + k - len(made) + 1
        of_message.setdefault(n, []).append(step)
    placed: list[_Placed] = []
    alone = len(steps)
    for n in sorted({*range(len(said)), *of_message}):
        message = said[n] if n < len(said) else {}
        mine = of_message.get(n, [])
        for c, step in enumerate(mine):
            placed.append(
                _Placed(index=step.index, message=message, step=step, call=c, calls=len(mine))
            )
        if not mine:
            placed.append(_Placed(index=alone, message=message, step=None))
            alone += 1
    return placed


def _user_turn(eid: str, turn: int, message: str) -> UserTurnView:
    return UserTurnView(turn=turn, message=snippet(message, raw_page(eid, f"turn-{turn}-user")))


def _turns(e: EpisodeRow, steps: list[StepRow], kept: TurnsRow) -> list[TurnView]:
    """Every step with the assistant message that made it, marked with its user turn."""
    users = {end.turn + 1: end.user for end in kept.turn_ends() if end.user is not None}
    # the end of a turn is news only where a user speaks again (one turn: its submit)
    ended = {end.step for end in kept.turn_ends()} if users else set()
    views, turn = [], 0
    for p in _placed(e, steps, kept):
        view = _turn(e.id, p.index, p.message if p.call == 0 else {}, p.step)
        now = kept.turn_of(p.step.index) if p.step is not None else turn
        opens = _user_turn(e.id, now, users.get(now, "")) if now > turn else None
        views.append(
            view.model_copy(
                update={
                    "turn": now,
                    "opens": opens,
                    "turn_end": p.step is not None and p.step.index in ended,
                    "call": p.call,
                    "calls": p.calls,
                }
            )
        )
        turn = now
    return views


def _later_turns(e: EpisodeRow, kept: TurnsRow, turns: list[TurnView]) -> list[UserTurnView]:
    """User turns opened after the last step shown."""
    last = turns[-1].turn if turns else 0
    return [
        _user_turn(e.id, end.turn + 1, end.user)
        for end in kept.turn_ends()
        if end.user is not None and end.turn + 1 > last
    ]


def _tools(e: EpisodeRow, kept: TurnsRow) -> list[ToolView]:
    out = []
    for schema in kept.tools:
        fn = schema.get("function", schema) if isinstance(schema, dict) else {}
        fn = fn if isinstance(fn, dict) else {}
        name = display(fn.get("name", ""))
        out.append(
            ToolView(
                name=name,
                kind=display(schema.get("x-boxgym-kind") or fn.get("x-boxgym-kind") or ""),
                description=snippet(display(fn.get("description") or ""), max_chars=2000),
                definition=snippet(_json(schema), raw_page(e.id, "tools")),
            )
        )
    return out


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


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
    said = [t.text.text for t in sorted(turns, key=lambda t: t.index)]
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


def _stored(store: Store, episode_id: str) -> EpisodeRow | None:
    """An episode by exact id, or None."""
    with store.session() as s:
        return s.get(EpisodeRow, episode_id)


def _fork(store: Store, row: LineageRow | None) -> ForkView | None:
    if row is None:
        return None
    parent = _stored(store, row.parent_id)
    href = f"{episode_page(parent.id)}#step-{row.fork_step}" if parent is not None else ""
    return ForkView(
        parent_id=row.parent_id,
        parent_href=href,
        fork_step=row.fork_step,
        branch=row.branch,
        parent_task=parent.task_id if parent is not None else "",
    )


def _branches(store: Store, rows: list[LineageRow]) -> list[BranchView]:
    out = []
    for row in rows:
        child = _stored(store, row.episode_id)
        out.append(
            BranchView(
                episode_id=row.episode_id,
                href=episode_page(row.episode_id) if child is not None else "",
                fork_step=row.fork_step,
                branch=row.branch,
                outcome=child.outcome if child is not None else "",
                reward=child.reward if child is not None else None,
                branches=len(store.branches(row.episode_id)),
            )
        )
    return out


def episode_view(store: Store, episode_id: str) -> EpisodePage:
    """The episode page's data for an episode id (exact)."""
    e = _episode(store, episode_id)
    steps = store.steps(e.id)
    kept = store.turns(e.id)
    verdict = store.verdicts(e.run_id).get(e.id)
    turns = _turns(e, steps, kept)
    flags = _flags(verdict, steps, turns)
    by_index = {t.index: t for t in turns}
    for f in flags:
        if f.step is not None and f.step in by_index:
            by_index[f.step].flags.append(f.name)
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
        later_turns=_later_turns(e, kept, turns),
        user_turns=1 + sum(end.user is not None for end in kept.turn_ends()),
        tools=_tools(e, kept),
        user_transcript=(
            snippet(_json(kept.user_transcript), raw_page(e.id, "user-transcript"))
            if kept.user_transcript
            else None
        ),
        verdict=verdict,
        components=_components(verdict),
        flags=flags,
        state=final_state(e.env_id, e.task_id, e.export, raw_page(e.id, "diff")),
        raw_diff=raw_page(e.id, "diff"),
        forked_from=_fork(store, store.lineage(e.id)),
        branches=_branches(store, store.branches(e.id)),
    )


def _step_text(e: EpisodeRow, steps: list[StepRow], kept: TurnsRow, index: int, part: str) -> str:
    placed = next((p for p in _placed(e, steps, kept) if p.index == index), None)
    said, step = (placed.message, placed.step) if placed is not None else ({}, None)
    if part == "text" and placed is not None and said:
        return display(said.get("content") or "")
    if part == "reasoning" and said:
        return _reasoning(said)
    if part == "observation" and step is not None:
        return step.observation
    if part == "call" and step is not None and not step.tool and said:
        return written_call(said)
    if part == "call" and step is not None:
        return json.dumps(
            {"name": step.tool, "arguments": step.arguments}, indent=2, ensure_ascii=False
        )
    raise StoreError(f"episode {e.id} has no {part} at step {index}")


def _turn_text(store: Store, e: EpisodeRow, name: str) -> str | None:
    """The texts of an episode's tools and user turns by raw page name, or None."""
    kept = store.turns(e.id)
    if name == "tools" and kept.tools:
        return _json(kept.tools)
    if name == "user-transcript" and kept.user_transcript:
        return _json(kept.user_transcript)
    match = re.fullmatch(r"turn-(\d+)-user", name)
    said = {end.turn + 1: end.user for end in kept.turn_ends() if end.user is not None}
    return said.get(int(match.group(1))) if match else None


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
    kept = _turn_text(store, e, name)
    if kept is not None:
        return kept
    match = re.fullmatch(r"step-(\d+)-(text|reasoning|observation|call)", name)
    if match is None:
        raise StoreError(f"episode {e.id} has no text named {name!r}")
    return _step_text(e, store.steps(e.id), store.turns(e.id), int(match.group(1)), match.group(2))
