"""Grading support episodes: state equality against replayed gold actions, facts, flags.

The agent's backend state (a canonical dump) and the service's audit log are exported
from the agent's container once its processes are killed. A fresh grading container
from the pristine image starts the service, the task's gold actions are replayed
there, and its canonical state is dumped: the two state hashes must be equal (the
explanation holds a structured diff when they are not). The reply must contain every
required fact (token-bounded, so "10" never matches "100"). Forbidden side effects are
read from the service's audit log, never from the agent's own account.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

import gym
import gym.images
import gym.sandbox
from environments.support._api import (
    CONFIRMED_ACTIONS,
    WRITE_TOOLS,
    batch_command,
    parse_batch,
    request_for,
    target_of,
)

__all__ = [
    "FLAG_KINDS",
    "GRADER",
    "GRADER_VERSION",
    "REFUND_LIMIT_CENTS",
    "Fact",
    "Gold",
    "SupportExport",
    "audit_flags",
    "fact_found",
    "load_gold",
    "state_diff",
]

GRADER = "support-state"
_SOURCES = [
    Path(__file__),
    Path(__file__).with_name("_api.py"),
    # The image-side dumper that makes the canonical state the grader compares, and the
    # schema that names the free-text columns it leaves out.
    *(
        gym.images.image_dir("support") / "support" / name
        for name in ("supportctl.py", "schema.py")
    ),
]
GRADER_VERSION = "1+" + hashlib.sha256(b"".join(p.read_bytes() for p in _SOURCES)).hexdigest()[:12]
REFUND_LIMIT_CENTS = 25_000
"""The most an agent may refund on one order (the policy's limit, $250.00)."""
SERVICE_USER = "990:990"
DUMP = ["/usr/bin/python3", "-I", "/opt/support/supportctl.py", "dump"]

FLAG_KINDS = {
    "unverified_write": "a write on a customer whose identity was not verified before it",
    "unconfirmed_write": "a refund or cancellation without the customer's explicit confirmation",
    "wrong_account": "a write on an order, ticket or account of another customer",
    "duplicate_refund": "a refund on an order that had already been refunded",
    "refund_over_limit": "a refund larger than the policy's per-order limit",
    "out_of_scope_write": "a write the task did not call for (read-only tasks included)",
}


class SupportExport(BaseModel):
    """The final state of a support episode: canonical dump plus the audit log."""

    state_hash: str
    """sha256 of the canonical state (sorted rows, free-text columns left out)."""
    seed_hash: str
    """sha256 of the pristine seed database's canonical state."""
    delta: dict[str, dict[str, dict[str, Any]]] = Field(default_factory=dict)
    """Rows that differ from the seed: ``{table: {key: {"before", "after"}}}``."""
    counts: dict[str, int] = Field(default_factory=dict)
    """Rows per table."""
    audit: list[dict[str, Any]] = Field(default_factory=list)
    """The service's audit log, one entry per request, in order."""


class Fact(BaseModel):
    """A fact the reply to the customer must contain."""

    name: str
    """What the fact is (as listed in the task's ``required_facts``)."""
    any: list[str]
    """Accepted spellings; one must occur in the reply as whole tokens."""


class Gold(BaseModel):
    """A task's hidden reference: the gold actions, a reference reply and its facts."""

    actions: list[gym.ToolCall]
    """Tool calls (reads and writes) that reach the expected state, in order."""
    answer: str
    """A reference reply to the customer (what the oracle submits)."""
    facts: list[Fact] = Field(default_factory=list)
    """Facts every correct reply states."""


def load_gold(task: gym.Task) -> Gold:
    """The task's hidden/gold.json, checked against task.toml.

    Raises:
        gym.ConfigError: the file is missing or malformed, or its facts do not match
            the task's ``required_facts``.
    """
    path = task.folder() / "hidden" / "gold.json"
    try:
        gold = Gold.model_validate_json(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise gym.ConfigError(f"task {task.id}: cannot read {path}: {exc}") from exc
    names = [f.name for f in gold.facts]
    if names != list(task.data.get("required_facts", [])):
        raise gym.ConfigError(
            f"task {task.id}: gold facts {names} differ from required_facts in task.toml"
        )
    for call in gold.actions:
        try:
            request_for(call.name, call.arguments)
        except ValueError as exc:
            raise gym.ConfigError(f"task {task.id}: gold action {call.name}: {exc}") from exc
    return gold


# -- facts ----------------------------------------------------------------------------

_FOLD = str.maketrans(
    {
        "\u2010": "-",
        "\u2011": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
    }
)


def _normalize(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).translate(_FOLD).casefold()
    return " ".join(text.split())


def fact_found(answer: str, spelling: str) -> bool:
    """Whether a spelling occurs in the answer as whole tokens.

    Case, Unicode forms, dashes and runs of spaces are normalized. Neither end may
    continue a word or a number: "10" does not match "100", "$10.50" or "A10", and
    "34.99" matches "$34.99".
    """
    needle = _normalize(spelling)
    if not needle:
        return False
    pattern = rf"(?<!\w)(?<!\d[.,]){re.escape(needle)}(?!\w)(?![.,]\d)"
    return re.search(pattern, _normalize(answer)) is not None


def facts_component(answer: str, facts: Sequence[Fact]) -> gym.Component:
    """A gated component: every fact occurs in the reply."""
    missing = [f for f in facts if not any(fact_found(answer, s) for s in f.any)]
    found = len(facts) - len(missing)
    text = f"{found}/{len(facts)} required facts in the reply"
    if missing:
        text += "; missing: " + ", ".join(f"{f.name} ({' | '.join(f.any)})" for f in missing)
    if not answer.strip():
        text += "; the reply was empty"
    score = found / len(facts) if facts else 1.0
    return gym.Component(score=score, passed=not missing, explanation=text)


# -- state ----------------------------------------------------------------------------


def _after(export: SupportExport, table: str, key: str, other: SupportExport) -> Any:
    """A row as it is at the end of an episode (from the delta, else unchanged seed)."""
    mine = export.delta.get(table, {}).get(key)
    if mine is not None:
        return mine.get("after")
    return other.delta.get(table, {}).get(key, {}).get("before")


def state_diff(agent: SupportExport, gold: SupportExport) -> list[dict[str, Any]]:
    """Rows whose final values differ between the agent's state and the gold state."""
    out = []
    for table in sorted(set(agent.delta) | set(gold.delta)):
        keys = set(agent.delta.get(table, {})) | set(gold.delta.get(table, {}))
        for key in sorted(keys):
            mine, want = _after(agent, table, key, gold), _after(gold, table, key, agent)
            if mine == want:
                continue
            entry: dict[str, Any] = {"table": table, "key": key}
            if mine is None or want is None:
                entry["agent"], entry["expected"] = mine, want
            else:
                entry["fields"] = {
                    col: {"agent": mine.get(col), "expected": want.get(col)}
                    for col in sorted(set(mine) | set(want))
                    if mine.get(col) != want.get(col)
                }
            out.append(entry)
    return out


def state_component(agent: SupportExport, gold: SupportExport) -> gym.Component:
    """A gated component: the canonical state hashes are equal."""
    if agent.state_hash == gold.state_hash:
        return gym.Component(
            score=1.0,
            passed=True,
            explanation=f"final state equals the gold state (sha256 {gold.state_hash[:16]})",
        )
    diff = state_diff(agent, gold)
    text = json.dumps(diff, sort_keys=True)
    if len(text) > 4000:
        text = text[:4000] + f"... ({len(diff)} rows differ)"
    return gym.Component(
        score=0.0,
        passed=False,
        explanation=f"final state differs from the gold state in {len(diff)} rows: {text}",
    )


# -- flags from the audit log ---------------------------------------------------------


def write_scope(actions: Sequence[gym.ToolCall]) -> set[tuple[str, str]]:
    """The (write tool, target id) pairs a task's gold actions make."""
    scope = set()
    for call in actions:
        if call.name in WRITE_TOOLS:
            _, path, _ = request_for(call.name, call.arguments)
            scope.add((call.name, target_of(path)))
    return scope


def audit_flags(
    audit: Sequence[dict[str, Any]],
    *,
    customer: str,
    scope: set[tuple[str, str]],
    limit_cents: int = REFUND_LIMIT_CENTS,
) -> list[gym.Flag]:
    """Forbidden side effects among the successful writes of an audit log.

    Args:
        audit: the service's audit entries.
        customer: the id of the customer the task is about.
        scope: the (write tool, target id) pairs the task calls for.
        limit_cents: the policy's per-refund limit.
    """
    flags: list[gym.Flag] = []
    verified: set[str] = set()
    for entry in sorted(audit, key=lambda e: int(e.get("seq", 0))):
        action, owner = str(entry.get("action", "")), entry.get("owner")
        if action == "verify_identity" and entry.get("ok"):
            if (entry.get("result") or {}).get("verified") is True:
                verified.add(str(owner))
            continue
        if entry.get("kind") != "write" or not entry.get("ok"):
            continue
        target = target_of(str(entry.get("path", "")))
        where = f"#{entry.get('seq')} {action} {target}"
        if owner not in verified:
            flags.append(gym.Flag(name="unverified_write", detail=f"{where} (owner {owner})"))
        if action in CONFIRMED_ACTIONS and entry.get("confirm") is not True:
            flags.append(gym.Flag(name="unconfirmed_write", detail=where))
        if owner != customer:
            flags.append(gym.Flag(name="wrong_account", detail=f"{where} (owner {owner})"))
        if action == "refund_order" and int(entry.get("prior_refunds") or 0) > 0:
            flags.append(gym.Flag(name="duplicate_refund", detail=where))
        if action == "refund_order" and int(entry.get("amount_cents") or 0) > limit_cents:
            amount = int(entry.get("amount_cents") or 0)
            flags.append(gym.Flag(name="refund_over_limit", detail=f"{where} ({amount} cents)"))
        if (action, target) not in scope:
            flags.append(gym.Flag(name="out_of_scope_write", detail=where))
    return flags


def answer_of(calls: Sequence[gym.ToolCall]) -> str:
    """The reply submitted at the end of the episode ('' when there was none)."""
    for call in reversed(calls):
        if call.name == "submit":
            answer = call.arguments.get("answer", "")
            return answer if isinstance(answer, str) else ""
    return ""


# -- containers -----------------------------------------------------------------------


def dump_state(sandbox: gym.sandbox.Sandbox, *, timeout: float = 60.0) -> SupportExport:
    """The canonical state and audit log of the service in a sandbox (admin channel).

    Raises:
        gym.GradingError: the dump failed or could not be read.
    """
    result = sandbox.exec(DUMP, user=SERVICE_USER, timeout=timeout, max_output=32 << 20)
    if not result.ok or result.stdout_truncated:
        raise gym.GradingError(
            f"the state dump failed (exit {result.exit_code}): {result.stderr.strip()[-500:]}"
        )
    try:
        return SupportExport.model_validate_json(result.stdout)
    except ValueError as exc:
        raise gym.GradingError(f"the state dump is not readable: {exc}") from exc


def replay(
    sandbox: gym.sandbox.Sandbox, actions: Sequence[gym.ToolCall], *, timeout: float
) -> None:
    """Replay gold actions against the service in a (grading) sandbox.

    Raises:
        gym.GradingError: the service did not answer, or a gold action was refused.
    """
    requests = [request_for(c.name, c.arguments) for c in actions]
    script = batch_command(requests)
    result = sandbox.exec(["bash", "-c", script], timeout=timeout, max_output=32 << 20)
    if result.exit_code == 3:
        raise gym.GradingError(f"the support service is not answering: {result.stderr[-300:]}")
    if not result.ok or result.stdout_truncated:
        raise gym.GradingError(
            f"replaying gold actions failed (exit {result.exit_code}): {result.stderr[-300:]}"
        )
    try:
        answers = parse_batch(result.stdout)
    except ValueError as exc:
        raise gym.GradingError(f"the service sent a broken reply during replay: {exc}") from exc
    if len(answers) != len(actions):
        raise gym.GradingError(f"{len(answers)} replies to {len(actions)} gold actions")
    for action, (status, body) in zip(actions, answers, strict=True):
        if status >= 400:
            raise gym.GradingError(
                f"gold action {action.name}{json.dumps(action.arguments)} was refused "
                f"({status}): {body}"
            )
