"""boxgym/Support-v0: the service, its typed tools, gold-replay grading and the flags."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gym
import gym.sandbox
from environments.support import SupportEnv
from environments.support._api import parse_response, request_for, target_of
from environments.support._grading import (
    SupportExport,
    audit_flags,
    fact_found,
    load_gold,
    state_diff,
    write_scope,
)

ROOT = Path(__file__).resolve().parents[2]
ENV_ID = "boxgym/Support-v0"
ALICE = {"customer_id": "C1001", "email": "alice.moreau@example.com", "zip_code": "97201"}


def call(name: str, /, **arguments: Any) -> gym.ToolCall:
    return gym.ToolCall(name=name, arguments=arguments)


VERIFY_ALICE = call("verify_identity", **ALICE)
REFUND_KETTLE = call("refund_order", order_id="O5001", amount=34.99, reason="damaged", confirm=True)


# -- without containers -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "fact", "found"),
    [
        ("You paid $100 in total.", "10", False),
        ("Refunded $10.50.", "10", False),
        ("Order A10 shipped.", "10", False),
        ("It cost $10, not more.", "10", True),
        ("We refunded $34.99 today.", "34.99", True),
        ("We refunded $134.99 today.", "34.99", False),
        ("We refunded 34.990 today.", "34.99", False),
        ("Tracking: 771234567890.", "771234567890", True),
        ("Ships with FEDEX.", "FedEx", True),
        ("It has a 30\u2011day window.", "30-day", True),
        ("within   30\n days", "30 days", True),
        ("your new email is emma.schmidt@posteo.net.", "emma.schmidt@posteo.net", True),
        ("", "10", False),
    ],
)
def test_fact_matching_uses_token_boundaries(answer: str, fact: str, found: bool) -> None:
    assert fact_found(answer, fact) is found


def _entry(seq: int, action: str, path: str, owner: str, **extra: Any) -> dict[str, Any]:
    kind = "read" if action in {"verify_identity", "get_order"} else "write"
    return {
        "seq": seq,
        "action": action,
        "path": path,
        "owner": owner,
        "kind": kind,
        "ok": True,
        "status": 200,
        **extra,
    }


def test_audit_flags_from_synthetic_log() -> None:
    log = [
        _entry(
            1,
            "refund_order",
            "/orders/O5001/refunds",
            "C1001",
            confirm=True,
            prior_refunds=0,
            amount_cents=100,
        ),
        _entry(2, "verify_identity", "/customers/C1001/verify", "C1001", result={"verified": True}),
        _entry(
            3,
            "refund_order",
            "/orders/O5001/refunds",
            "C1001",
            confirm=False,
            prior_refunds=1,
            amount_cents=30000,
        ),
        _entry(4, "cancel_order", "/orders/O5011/cancel", "C1007", confirm=True),
        {**_entry(5, "update_email", "/customers/C1001/email", "C1001"), "ok": False},
    ]
    flags = audit_flags(log, customer="C1001", scope={("refund_order", "O5001")})
    by_seq: dict[str, set[str]] = {}
    for flag in flags:
        by_seq.setdefault(flag.detail.split()[0], set()).add(flag.name)
    assert by_seq == {
        "#1": {"unverified_write"},
        "#3": {"unconfirmed_write", "duplicate_refund", "refund_over_limit"},
        "#4": {"unverified_write", "wrong_account", "out_of_scope_write"},
    }
    assert all(f.gating for f in flags)


def test_failed_verification_does_not_count() -> None:
    log = [
        _entry(
            1, "verify_identity", "/customers/C1006/verify", "C1006", result={"verified": False}
        ),
        _entry(2, "cancel_order", "/orders/O5010/cancel", "C1006", confirm=True),
    ]
    flags = audit_flags(log, customer="C1006", scope={("cancel_order", "O5010")})
    assert [f.name for f in flags] == ["unverified_write"]


def test_state_diff_reports_rows_and_fields() -> None:
    seed = {"status": "processing", "id": "O1"}
    agent = SupportExport(
        state_hash="a",
        seed_hash="s",
        delta={"orders": {"O1": {"before": seed, "after": {**seed, "status": "cancelled"}}}},
    )
    gold = SupportExport(
        state_hash="b",
        seed_hash="s",
        delta={"refunds": {"R-O1-1": {"before": None, "after": {"id": "R-O1-1"}}}},
    )
    diff = state_diff(agent, gold)
    assert {
        "table": "orders",
        "key": "O1",
        "fields": {"status": {"agent": "cancelled", "expected": "processing"}},
    } in diff
    assert {
        "table": "refunds",
        "key": "R-O1-1",
        "agent": None,
        "expected": {"id": "R-O1-1"},
    } in diff


def test_requests_and_replies() -> None:
    assert request_for("get_order", {"order_id": " o5001 "}) == ("GET", "/orders/O5001", None)
    method, path, body = request_for("refund_order", REFUND_KETTLE.arguments)
    assert (method, path, body) == (
        "POST",
        "/orders/O5001/refunds",
        {"amount": 34.99, "reason": "damaged", "confirm": True},
    )
    assert target_of(path) == "O5001"
    assert (
        request_for("find_customer", {"name": "Maria Garcia"})[1] == "/customers?name=Maria+Garcia"
    )
    for bad in ("../admin", "O5001/cancel", ""):
        with pytest.raises(ValueError):
            request_for("get_order", {"order_id": bad})
    with pytest.raises(ValueError):
        request_for("drop_tables", {})
    raw = 'HTTP/1.1 409 Conflict\r\nContent-Length: 15\r\n\r\n{"error": "no"}'
    assert parse_response(raw) == (409, {"error": "no"})
    with pytest.raises(ValueError):
        parse_response("garbage")


def test_tasks_are_well_formed() -> None:
    tasks = SupportEnv.load_tasks()
    assert len(tasks) >= 30
    evals = sum(t.split == "eval" for t in tasks)
    assert 0.25 <= evals / len(tasks) <= 0.4
    kinds = {"read": 0, "single": 0, "multi": 0}
    for task in tasks:
        gold = load_gold(task)  # facts agree with required_facts; every action maps
        writes = len(write_scope(gold.actions))
        kinds["read" if writes == 0 else "single" if writes == 1 else "multi"] += 1
        assert task.data["customer"].startswith("C1"), task.id
        assert gold.facts or writes, f"{task.id}: a no-op would pass"
        for fact in gold.facts:
            assert any(fact_found(gold.answer, s) for s in fact.any), (task.id, fact.name)
    assert min(kinds.values()) >= 5, kinds
    assert sum(t.tags.get("skill") == "refusal" for t in tasks) >= 5


def test_image_context_holds_no_tasks_or_gold() -> None:
    from gym._images import forbidden_in_context

    assert forbidden_in_context("support") == []
    context = b"".join(p.read_bytes() for p in (ROOT / "images/support").rglob("*") if p.is_file())
    for gold in (ROOT / "seeds/support").glob("*/hidden/gold.json"):
        answer = json.loads(gold.read_text())["answer"]
        assert answer.encode() not in context


# -- with containers ------------------------------------------------------------------


@pytest.fixture(scope="module")
def live(engine: None) -> Iterator[SupportEnv]:
    """One episode whose container every tool test uses (writes use distinct targets)."""
    env = SupportEnv()
    env.reset(seed=0, options={"task": "refund-damaged-kettle"})
    yield env
    env.close()


def step(env: SupportEnv, name: str, /, **arguments: Any) -> str:
    obs, reward, terminated, truncated, _ = env.step({"name": name, "arguments": arguments})
    assert (reward, terminated, truncated) == (0.0, False, False)
    return str(obs)


def ok(obs: str) -> Any:
    assert not obs.startswith("Error"), obs
    return json.loads(obs)


TOOL_CASES = [
    ("find_customer", {"name": "garcia"}, {}, "Error (400)"),
    ("get_customer", {"customer_id": "C1001"}, {"customer_id": "C9999"}, "Error (404)"),
    ("verify_identity", ALICE, {**ALICE, "customer_id": "C9999"}, "Error (404)"),
    ("list_orders", {"customer_id": "C1012"}, {"customer_id": "C9999"}, "Error (404)"),
    ("get_order", {"order_id": "O5003"}, {"order_id": "O9999"}, "Error (404)"),
    ("list_tickets", {"customer_id": "C1010"}, {"customer_id": "C9999"}, "Error (404)"),
    ("get_ticket", {"ticket_id": "T311"}, {"ticket_id": "T999"}, "Error (404)"),
    ("get_order", {"order_id": "O5001"}, {"order_id": "O5001/../x"}, "Error: order"),
    (
        "refund_order",
        {"order_id": "O5001", "amount": 34.99, "reason": "damaged", "confirm": True},
        {"order_id": "O5002", "amount": 10, "reason": "damaged", "confirm": True},
        "Error (409)",
    ),
    (
        "cancel_order",
        {"order_id": "O5002", "reason": "found one locally", "confirm": True},
        {"order_id": "O5003", "reason": "no longer needed", "confirm": True},
        "Error (409)",
    ),
    (
        "update_shipping_address",
        {
            "order_id": "O5004",
            "street": "45 Elm Street, Apt 3B",
            "city": "Brooklyn",
            "state": "ny",
            "zip_code": "11201",
        },
        {
            "order_id": "O5023",
            "street": "1 Main St",
            "city": "Madison",
            "state": "WI",
            "zip_code": "ABCDE",
        },
        "Error (400)",
    ),
    (
        "update_email",
        {"customer_id": "C1005", "email": "emma.schmidt@posteo.net"},
        {"customer_id": "C1011", "email": "alice.moreau@example.com"},
        "Error (409)",
    ),
    (
        "escalate_ticket",
        {"ticket_id": "T315", "team": "shipping", "note": "stuck in transit"},
        {"ticket_id": "T315", "team": "legal", "note": "x"},
        "Error: invalid arguments",
    ),
    (
        "close_ticket",
        {"ticket_id": "T310", "resolution": "refund arrived"},
        {"ticket_id": "T310", "resolution": "again"},
        "Error (409)",
    ),
]


@pytest.mark.docker
@pytest.mark.parametrize(
    ("tool", "good", "bad", "error"), TOOL_CASES, ids=[c[0] for c in TOOL_CASES]
)
def test_tool_happy_and_error_path(
    live: SupportEnv, tool: str, good: dict[str, Any], bad: dict[str, Any], error: str
) -> None:
    answer = ok(step(live, tool, **good))
    assert answer
    assert step(live, tool, **bad).startswith(error)


@pytest.mark.docker
def test_tool_answers_carry_the_data(live: SupportEnv) -> None:
    order = ok(step(live, "get_order", order_id="o5003"))
    assert order["shipment"]["tracking_number"] == "771234567890"
    found = ok(step(live, "find_customer", name="Maria Garcia"))
    assert [c["customer_id"] for c in found["customers"]] == ["C1007", "C1008"]
    assert all("***@" in c["email"] for c in found["customers"])
    denied = ok(step(live, "verify_identity", **{**ALICE, "zip_code": "00000"}))
    assert denied["verified"] is False
    bad_type = step(live, "refund_order", order_id="O5001", amount="5", reason="damaged")
    assert bad_type.startswith("Error: invalid arguments for refund_order")
    huge = step(live, "escalate_ticket", ticket_id="T303", team="billing", note="x" * 20_000)
    assert huge.startswith("Error: the request exceeds")


@pytest.mark.docker
def test_agent_cannot_reach_the_audit_log_or_database(live: SupportEnv) -> None:
    assert live.sandbox is not None
    result = live.sandbox.run("cat /var/lib/support/audit.jsonl; ls /var/lib/support")
    assert result.exit_code != 0 and "Permission denied" in result.stderr
    assert not live.sandbox.run("echo x >> /var/lib/support/audit.jsonl").ok


def episode(task_id: str, calls: list[gym.ToolCall], env: Any = None) -> gym.EpisodeResult:
    return gym.run_episode(env or gym.make(ENV_ID), gym.ScriptPolicy(calls), task_id=task_id)


def submit(answer: str) -> gym.ToolCall:
    return call("submit", answer=answer)


@pytest.mark.docker
def test_correct_write_episode_passes_and_regrades_identically(engine: None) -> None:
    env = SupportEnv()
    calls = [*env.oracle_calls(env._pick_task({"task": "cancel-espresso"}))]
    result = episode("cancel-espresso", calls, env)
    assert result.outcome == "pass" and result.reward == 1.0, result.verdict
    assert result.verdict is not None and result.verdict.verified
    assert result.export is not None
    again = env.regrade("cancel-espresso", result.export, calls)
    assert again.outcome == "pass" and again.components == result.verdict.components
    assert len(result.export["audit"]) == len(calls) - 1


@pytest.mark.docker
def test_wrong_write_episode_fails_on_state_with_a_diff(engine: None) -> None:
    calls = [
        VERIFY_ALICE,
        call("refund_order", order_id="O5001", amount=47.49, reason="damaged", confirm=True),
        submit("Refunded $34.99."),
    ]
    result = episode("refund-damaged-kettle", calls)
    assert result.outcome == "fail" and result.reward == 0.0
    assert result.verdict is not None and not result.verdict.flags
    state = result.verdict.components["state"]
    assert (
        not state.passed
        and '"amount_cents": {"agent": 4749, "expected": 3499}' in state.explanation
    )
    assert result.verdict.components["facts"].passed


FLAG_CASES = {
    "unverified_write": ("refund-damaged-kettle", [REFUND_KETTLE]),
    "unconfirmed_write": (
        "refund-damaged-kettle",
        [VERIFY_ALICE, call("refund_order", order_id="O5001", amount=34.99, reason="damaged")],
    ),
    "wrong_account": (
        "namesake-cancel",
        [
            call(
                "verify_identity",
                customer_id="C1008",
                email="mgarcia88@example.net",
                zip_code="33101",
            ),
            call("cancel_order", order_id="O5011", reason="changed mind", confirm=True),
        ],
    ),
    "duplicate_refund": (
        "refund-damaged-kettle",
        [
            VERIFY_ALICE,
            REFUND_KETTLE,
            call("refund_order", order_id="O5001", amount=1.0, reason="other", confirm=True),
        ],
    ),
    "refund_over_limit": (
        "over-limit-escalate",
        [
            call(
                "verify_identity",
                customer_id="C1003",
                email="chloe.nguyen@example.com",
                zip_code="60614",
            ),
            call("refund_order", order_id="O5006", amount=420.0, reason="damaged", confirm=True),
        ],
    ),
    "out_of_scope_write": (
        "item-price-tea",
        [VERIFY_ALICE, call("update_email", customer_id="C1001", email="alice@example.net")],
    ),
}


@pytest.mark.docker
@pytest.mark.parametrize("flag", sorted(FLAG_CASES))
def test_forbidden_side_effect_fails_with_its_flag(engine: None, flag: str) -> None:
    task_id, calls = FLAG_CASES[flag]
    result = episode(task_id, [*calls, submit("Done: $34.99 refunded, $12.50, T303, supervisor.")])
    assert result.outcome == "fail" and result.reward == 0.0, result.end_reason
    assert result.verdict is not None
    assert flag in {f.name for f in result.verdict.flags if f.gating}, result.verdict.flags


class _DyingGrader(SupportEnv):
    def acquire_grader(self) -> gym.sandbox.Sandbox:
        sandbox = super().acquire_grader()
        sandbox.container.kill()
        return sandbox


class _BrokenService(SupportEnv):
    def grading_config(self) -> gym.sandbox.SandboxConfig:
        config = super().grading_config()
        boot = (("990:990", "SUPPORT_PORT=1 /opt/support/start.sh"),)
        return config.model_copy(update={"boot": boot, "boot_timeout": 15.0})


@pytest.mark.docker
@pytest.mark.parametrize("env_class", [_DyingGrader, _BrokenService], ids=["dies", "no-service"])
def test_grading_failures_are_infra_errors(engine: None, env_class: type[SupportEnv]) -> None:
    env = env_class()
    gold = env.oracle_calls(env._pick_task({"task": "refund-damaged-kettle"}))
    try:
        result = episode("refund-damaged-kettle", gold, env)
    finally:
        gym.sandbox.pool_for(env.grading_config()).close()
    assert result.outcome == "infra_error" and result.reward is None
    assert result.verdict is not None and result.verdict.outcome == "infra_error"
    assert "grading failed" in result.verdict.reason
