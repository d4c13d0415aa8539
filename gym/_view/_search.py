"""Search across episodes: words in the task, environment, outcome, flags and messages.

One bounded SQL query (``LIKE`` on the stored JSON, at most `MAX_RESULTS` rows), so a
search over a big store stays a single scan. A query is words, all of which must match
(case-insensitive); a word may be qualified: ``task:gcd``, ``outcome:fail``,
``flag:tests_touched``, ``run:a0b1`` (an id prefix); ``"two words"`` is one phrase.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any, Literal

from pydantic import BaseModel, Field

from gym._store import EpisodeRow, RunRow, Store, VerdictRow
from gym._view._episodes import EpisodeItem, item
from gym._view._links import run_page
from gym._view._text import clean, display

__all__ = ["Hit", "SearchResult", "Term", "matching_ids", "parse_query", "search"]

MAX_RESULTS = 100
"""Episodes a search page lists at most."""
MAX_IDS = 5000
"""Episode ids one run's search answers at most."""
MAX_QUERY = 200
"""Characters of a query read (the rest is ignored, and the page says so)."""
MAX_TERMS = 8
"""Words of a query read."""
CONTEXT = 60
"""Characters shown on each side of a match in the messages."""

Where = Literal["any", "task", "outcome", "flag", "run"]
_TOKEN = re.compile(r'(?:(task|outcome|flag|run):)?(?:"([^"]*)"|(\S+))')


class Term(BaseModel):
    """One word of a query."""

    field: Where = "any"
    """Where it must match (``any``: task, environment, outcome, flags or messages)."""
    text: str


def parse_query(query: str) -> tuple[list[Term], str]:
    """The terms of a query, and a note when part of it was left out (else '')."""
    note = ""
    if len(query) > MAX_QUERY:
        query, note = query[:MAX_QUERY], f"only the first {MAX_QUERY} characters were read"
    terms = [
        Term(field=m.group(1) or "any", text=(m.group(2) or m.group(3) or "").strip())  # type: ignore[arg-type]
        for m in _TOKEN.finditer(query)
    ]
    terms = [t for t in terms if t.text]
    if len(terms) > MAX_TERMS:
        terms, note = terms[:MAX_TERMS], f"only the first {MAX_TERMS} words were used"
    return terms, note


def _like(text: str) -> str:
    """A LIKE pattern for the text anywhere (a backslash escapes the wildcards)."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _json_text(text: str) -> str:
    """The text as it reads inside stored JSON (quotes, newlines, non-ASCII escaped)."""
    return json.dumps(text)[1:-1]


def _condition(term: Term) -> Any:
    from sqlalchemy import Text, cast, or_
    from sqlmodel import col

    text, esc = term.text, "\\"
    if term.field == "task":
        return col(EpisodeRow.task_id).ilike(_like(text), escape=esc)
    if term.field == "outcome":
        return col(EpisodeRow.outcome) == text.lower()
    if term.field == "run":
        return col(EpisodeRow.run_id).startswith(text, autoescape=True)
    flags = cast(col(VerdictRow.flags), Text)
    if term.field == "flag":
        return flags.ilike(_like(_json_text(text).join('""')), escape=esc)
    return or_(
        col(EpisodeRow.task_id).ilike(_like(text), escape=esc),
        col(EpisodeRow.env_id).ilike(_like(text), escape=esc),
        col(EpisodeRow.outcome) == text.lower(),
        flags.ilike(_like(_json_text(text)), escape=esc),
        cast(col(EpisodeRow.messages), Text).ilike(_like(_json_text(text)), escape=esc),
    )


def _query(columns: Any, terms: list[Term], runs: Collection[str] | None) -> Any:
    from sqlalchemy import and_
    from sqlmodel import col, select

    verdict = and_(
        col(VerdictRow.episode_id) == col(EpisodeRow.id), col(VerdictRow.current).is_(True)
    )
    query = (
        select(*columns)
        .join(RunRow, col(RunRow.id) == col(EpisodeRow.run_id))
        .outerjoin(VerdictRow, verdict)
    )
    for term in terms:
        query = query.where(_condition(term))
    if runs is not None:
        query = query.where(col(EpisodeRow.run_id).in_(list(runs)))
    return query.order_by(
        col(RunRow.created_at).desc(),
        col(EpisodeRow.env_id),
        col(EpisodeRow.task_id),
        col(EpisodeRow.sample_index),
    )


class Hit(BaseModel):
    """One episode that matched."""

    item: EpisodeItem
    run_id: str
    run_label: str
    run_href: str
    context: str = ""
    """The first match in the messages with some text around it ('' when none matched)."""


class SearchResult(BaseModel):
    """What a search found."""

    query: str
    terms: list[Term] = Field(default_factory=list)
    hits: list[Hit] = Field(default_factory=list)
    more: bool = False
    """More episodes matched than are listed."""
    note: str = ""
    """Why part of the query was not read ('' when all was)."""


def _names(flags: list[dict[str, Any]] | None) -> list[str]:
    return [str(f.get("name", "")) for f in flags or [] if isinstance(f, dict)]


def _flag_ok(names: list[str], terms: list[Term]) -> bool:
    """Exact flag names (the SQL pattern found the quoted name anywhere in the flags)."""
    wanted = [t.text.lower() for t in terms if t.field == "flag"]
    return all(w in (n.lower() for n in names) for w in wanted)


def _texts(messages: list[dict[str, Any]]) -> list[str]:
    out = []
    for m in messages:
        out.append(display(m.get("content") or ""))
        for call in m.get("tool_calls") or []:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict):
                out.append(display(fn.get("arguments") or ""))
    return out


def context(messages: list[dict[str, Any]], terms: list[Term]) -> str:
    """Where the first free word of the query appears in the messages, on one line."""
    words = [t.text.lower() for t in terms if t.field == "any"]
    for text in _texts(messages):
        low = text.lower()
        for word in words:
            at = low.find(word)
            if at >= 0:
                start, end = max(0, at - CONTEXT), at + len(word) + CONTEXT
                shown = " ".join(text[start:end].split())
                return ("…" if start else "") + shown + ("…" if end < len(text) else "")
    return ""


def search(
    store: Store, query: str, *, runs: Collection[str] | None = None, limit: int = MAX_RESULTS
) -> SearchResult:
    """The episodes (of ``runs``, or of every run) matching every word of the query.

    Args:
        store: the run store.
        query: words (see the module's docstring).
        runs: the runs to search (None: all).
        limit: episodes listed at most.
    """
    terms, note = parse_query(query)
    result = SearchResult(query=query, terms=terms, note=note)
    if not terms:
        return result
    columns = (EpisodeRow, VerdictRow.flags, RunRow.label)
    with store.session() as s:
        rows = list(s.exec(_query(columns, terms, runs).limit(limit + 1)))
    for episode, flags, label in rows[:limit]:
        names = _names(flags)
        if not _flag_ok(names, terms):
            continue
        result.hits.append(
            Hit(
                item=item(episode, names),
                run_id=episode.run_id,
                run_label=label,
                run_href=run_page(episode.run_id),
                context=context(episode.messages, terms),
            )
        )
    result.more = len(rows) > limit
    return result


def matching_ids(store: Store, query: str, run_id: str) -> dict[str, Any]:
    """A run's episodes matching a query, as its page's script reads them.

    Returns:
        ``{"ids": [...], "more": bool, "note": str}``: up to `MAX_IDS` episode ids
        (cleaned by `clean`, as the page shows them).
    """
    terms, note = parse_query(query)
    if not terms:
        return {"ids": [], "more": False, "note": note}
    columns = (EpisodeRow.id, VerdictRow.flags)
    with store.session() as s:
        rows = list(s.exec(_query(columns, terms, [run_id]).limit(MAX_IDS + 1)))
    # cleaned as the page's data-id attributes are, so that they compare equal
    ids = [clean(eid) for eid, flags in rows[:MAX_IDS] if _flag_ok(_names(flags), terms)]
    return {"ids": ids, "more": len(rows) > MAX_IDS, "note": note}
