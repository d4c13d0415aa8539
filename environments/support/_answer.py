"""The structured answer of a support episode: typed values, each graded against one truth.

A task that asks the customer's questions declares them in task.toml (``[values.<name>]``
with a ``type``, for the prompt an ``asks`` text, and ``options`` for a choice). The agent
answers through ``submit(answer=..., values={name: value})``: one value per name, of its
type. The grader reads each declared name and nothing else, turns the value into the
type's canonical plain form (`canonical`, total: any input gives a value or a problem,
never an exception) and compares it with the gold value, in the judge, on plain values.
A list, a text holding several values, or any value that is not exactly one value of the
type is not an answer, so listing candidates never passes. A value also counts only if
the service showed its source to the agent: the audit log must hold a successful read
named in the gold's ``seen_in`` (``get_order O5013``), so no value is accepted from an
agent that never looked it up.
"""

from __future__ import annotations

import datetime
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

import gym
from environments.support._api import request_for, target_of

__all__ = [
    "CLAIMS",
    "TYPES",
    "Asked",
    "Fact",
    "answer_component",
    "asked_values",
    "canonical",
    "format_of",
    "judges_a_claim",
    "reply_of",
    "show",
    "values_of",
]

ValueType = Literal[
    "money", "date", "integer", "order_id", "ticket_id", "text", "choice", "boolean"
]
TYPES: dict[str, str] = {
    "money": "dollars, as a number such as 34.99",
    "date": "a date as YYYY-MM-DD",
    "integer": "a whole number",
    "order_id": "an order id such as O5001",
    "ticket_id": "a ticket id such as T301",
    "text": "a short text, exactly as the service shows it",
    "choice": "one of",
    "boolean": "true or false",
}
"""Each value type and how the prompt describes it."""
MAX_TEXT = 200
"""The longest text read as one value (longer text is not one value)."""
_MONEY = re.compile(r"\$?\s*(\d{1,9}|\d{1,3}(?:,\d{3}){1,2})(?:\.(\d{1,2}))?")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_IDS = {"order_id": re.compile(r"O\d{1,8}"), "ticket_id": re.compile(r"T\d{1,8}")}
_BOOLEANS = {"true": True, "yes": True, "false": False, "no": False}
_FOLD = str.maketrans({"\u2010": "-", "\u2011": "-", "\u2013": "-", "\u2014": "-"})


class Asked(BaseModel):
    """A value the task asks for (``[values.<name>]`` in task.toml; shown in the prompt)."""

    name: str
    type: ValueType
    asks: str = Field(min_length=1)
    """What the value is, in the prompt's words."""
    options: list[str] = Field(default_factory=list)
    """The allowed values of a ``choice``."""


class Fact(BaseModel):
    """The right value of one asked value (hidden/gold.json ``facts``)."""

    name: str
    """The asked value's name."""
    value: str | int | float | bool | None
    """The right value, in a form its type reads."""
    seen_in: list[str] = Field(min_length=1)
    """Reads that show the value (``"<tool> <target id>"``); one must be in the audit log."""


def asked_values(task: gym.Task) -> list[Asked]:
    """The values a task asks for, in the order task.toml lists them.

    Raises:
        gym.ConfigError: ``values`` is not a table of value tables, a type is unknown, or
            a choice has no options.
    """
    table = task.data.get("values", {})
    if not isinstance(table, dict):
        raise gym.ConfigError(f"task {task.id}: values must be a table ([values.<name>])")
    asked = []
    for name, spec in table.items():
        try:
            item = Asked.model_validate({**(spec if isinstance(spec, dict) else {}), "name": name})
        except ValidationError as exc:
            raise gym.ConfigError(f"task {task.id}: values.{name}: {exc}") from None
        if (item.type == "choice") != bool(item.options):
            raise gym.ConfigError(
                f"task {task.id}: values.{name}: options are for (and needed by) a choice"
            )
        asked.append(item)
    return asked


def format_of(asked: Asked) -> str:
    """How the prompt describes the value's type."""
    if asked.type == "choice":
        return "one of " + ", ".join(asked.options)
    return TYPES[asked.type]


# -- reading one value (total) ---------------------------------------------------------


def _normal(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).translate(_FOLD).casefold()
    return " ".join(text.split())


def _text(raw: Any) -> str | None:
    """A str of at most MAX_TEXT characters, stripped; None for anything else."""
    if type(raw) is not str or len(raw) > MAX_TEXT:
        return None
    return raw.strip()


def _money(raw: Any) -> int | None:
    """Cents of one dollar amount (a number, or a text such as "$1,234.50")."""
    if type(raw) in (int, float):
        if not 0 <= raw < 10**9 or not math.isfinite(raw):  # compared first: no overflow
            return None
        cents = round(raw * 100)
        return cents if abs(raw * 100 - cents) < 1e-6 else None
    text = _text(raw)
    match = _MONEY.fullmatch(text.removesuffix("USD").strip()) if text is not None else None
    if match is None:
        return None
    dollars, fraction = int(match[1].replace(",", "")), (match[2] or "0").ljust(2, "0")
    return dollars * 100 + int(fraction)


def _date(raw: Any) -> str | None:
    text = _text(raw)
    if text is None or not _DATE.fullmatch(text):
        return None
    try:
        return datetime.date.fromisoformat(text).isoformat()
    except ValueError:
        return None


def _integer(raw: Any) -> int | None:
    if type(raw) is int:
        return raw if abs(raw) < 10**9 else None
    if type(raw) is float:
        return int(raw) if math.isfinite(raw) and raw.is_integer() and abs(raw) < 10**9 else None
    text = _text(raw)
    if text is None or not (text.isascii() and text.isdigit() and len(text) <= 9):
        return None
    return int(text)


def _boolean(raw: Any) -> bool | None:
    if type(raw) is bool:
        return raw
    text = _text(raw)
    return _BOOLEANS.get(text.casefold()) if text is not None else None


def canonical(asked: Asked, raw: Any) -> tuple[Any, str]:
    """The plain canonical form of one given value, or ``(None, problem)``.

    Total: ``raw`` may be anything a tool call decodes to (any JSON value, however large
    or deep); only its type and, for texts, at most MAX_TEXT characters are looked at.
    ``None`` (JSON null) is the value "none" for every type.
    """
    if raw is None:
        return None, ""
    kind = asked.type
    value: Any
    if kind == "money":
        value = _money(raw)
    elif kind == "date":
        value = _date(raw)
    elif kind == "integer":
        value = _integer(raw)
    elif kind == "boolean":
        value = _boolean(raw)
    elif kind in _IDS:
        text = _text(raw)
        upper = text.upper() if text is not None else ""
        value = upper if _IDS[kind].fullmatch(upper) else None
    else:
        if kind == "text" and type(raw) is int and 0 <= raw < 10**30:
            raw = str(raw)  # a number-like text (a tracking number) given as a number
        text = _text(raw)
        value = _normal(text) if text else None
        if kind == "choice" and value is not None:
            value = next((o for o in asked.options if _normal(o) == value), None)
    if value is None:
        return None, f"{show(raw)} is not one value of type {kind} ({format_of(asked)})"
    return value, ""


def show(raw: Any) -> str:
    """A short description of a given value for an explanation (never the whole of it)."""
    if isinstance(raw, (list, tuple, dict)):
        return f"a {type(raw).__name__} of {len(raw)} items"
    if type(raw) in (str, int, float, bool) or raw is None:
        text = repr(raw) if type(raw) is not int or abs(raw) < 10**30 else "a huge integer"
        return text if len(text) <= 60 else text[:57] + "..."
    return f"a {type(raw).__name__}"


# -- the component ---------------------------------------------------------------------


def reply_of(calls: Sequence[gym.ToolCall]) -> str:
    """The reply submitted at the end of the episode ('' when there was none)."""
    for call in reversed(calls):
        if call.name == "submit":
            answer = call.arguments.get("answer", "")
            return answer if isinstance(answer, str) else ""
    return ""


def values_of(calls: Sequence[gym.ToolCall]) -> Mapping[str, Any]:
    """The ``values`` of the final ``submit`` ({} when there were none or not an object)."""
    for call in reversed(calls):
        if call.name == "submit":
            values = call.arguments.get("values")
            return values if isinstance(values, dict) else {}
    return {}


CLAIMS: Mapping[str, tuple[str, ...]] = {"verify_identity": ("email", "zip_code")}
"""Actions whose reply judges a claim made in their arguments, not the customer's records.

A reply to such a request shows the customer's answer only when it carried the
customer's claim (the gold's arguments): with invented details ``verify_identity``
answers "does not match" for anyone, and a task whose answer is "not verified" passed
without the customer's details ever being checked (found by a red-team helper)."""

Read = tuple[str, str, tuple[str, ...] | None]
"""A successful request: its action, target id and claim (`CLAIMS`; () for the rest)."""


def _claim(action: str, arguments: Any) -> tuple[str, ...] | None:
    """The claim a request carried, as the service compares it (None: not readable)."""
    names = CLAIMS.get(action, ())
    if not isinstance(arguments, Mapping):
        return None if names else ()
    said = [arguments.get(name) for name in names]
    texts = [value for value in said if isinstance(value, str)]
    if len(texts) != len(said):
        return None
    return tuple(" ".join(text.split()).casefold() for text in texts)


def gold_claims(actions: Sequence[gym.ToolCall]) -> dict[tuple[str, str], tuple[str, ...]]:
    """(action, target id) -> the claim of each of the gold's requests that carries one."""
    claims = {}
    for call in actions:
        if call.name in CLAIMS:
            _, path, body = request_for(call.name, call.arguments)
            claim = _claim(call.name, body)
            if claim is not None:
                claims[(call.name, target_of(path))] = claim
    return claims


def _seen(
    reads: set[Read], sources: Sequence[str], claims: Mapping[tuple[str, str], tuple[str, ...]]
) -> bool:
    for source in sources:
        action, _, target = source.partition(" ")
        key = (action, target.strip().upper())
        want = claims.get(key) if action in CLAIMS else ()
        if want is not None and (*key, want) in reads:
            return True
    return False


def successful_reads(audit: Sequence[Mapping[str, Any]]) -> set[Read]:
    """The (action, target id, claim) of every successful request in an audit log."""
    reads: set[Read] = set()
    for entry in audit:
        action = entry.get("action")
        if entry.get("ok") is True and isinstance(action, str):
            path = entry.get("path")
            target = target_of(path if isinstance(path, str) else "")
            reads.add((action, target, _claim(action, entry.get("body"))))
    return reads


def answer_component(
    asked: Sequence[Asked],
    facts: Sequence[Fact],
    *,
    reply: str,
    values: Mapping[str, Any],
    audit: Sequence[Mapping[str, Any]],
    gold: Sequence[gym.ToolCall] = (),
) -> gym.Component:
    """A gated component: a reply was sent, and every asked value is right and was seen.

    Only the asked names are read from ``values``; other names are ignored. ``gold`` is
    the gold's actions: a source that judges a claim (`CLAIMS`) counts only when it was
    asked with the gold's claim.
    """
    truth = {f.name: f for f in facts}
    reads = successful_reads(audit)
    claims = gold_claims(gold)
    problems, right = [], 0
    for item in asked:
        fact = truth[item.name]
        want, _ = canonical(item, fact.value)
        given = values.get(item.name, _MISSING)
        got, problem = (None, "no value given") if given is _MISSING else canonical(item, given)
        if problem:
            problems.append(f"{item.name}: {problem}")
        elif got != want:
            problems.append(f"{item.name}: {show(given)} is not the right value ({want!r})")
        elif not _seen(reads, fact.seen_in, claims):
            where = " or ".join(fact.seen_in)
            problems.append(
                f"{item.name}: right, but never shown to the agent (no successful {where}"
                + (" with the customer's details)" if judges_a_claim(fact.seen_in) else ")")
            )
        else:
            right += 1
    text = f"{right}/{len(asked)} asked values right" if asked else "no values asked"
    if not reply.strip():
        problems.append("the reply to the customer is empty")
    if problems:
        text += "; " + "; ".join(problems)
    score = right / len(asked) if asked else 1.0
    return gym.Component(score=score, passed=not problems, explanation=text)


_MISSING: Any = object()


def judges_a_claim(sources: Sequence[str]) -> bool:
    """Whether a fact's sources (``seen_in``) name a request that judges a claim."""
    return any(source.partition(" ")[0] in CLAIMS for source in sources)
