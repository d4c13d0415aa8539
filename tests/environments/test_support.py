"""boxgym/Support-v0: the service, its typed tools, gold-replay grading, answers, flags."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gym
import gym.sandbox
from environments.support import SupportEnv
from environments.support._answer import (
    Asked,
    Fact,
    answer_component,
    asked_values,
    canonical,
)
from environments.support._api import WRITE_TOOLS, parse_response, request_for, target_of
from environments.support._grading import (
    SupportExport,
    audit_entries,
    audit_flags,
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


MONEY = Asked(name="amount", type="money", asks="x")
DATE = Asked(name="day", type="date", asks="x")
COUNT = Asked(name="n", type="integer", asks="x")
ORDER = Asked(name="order", type="order_id", asks="x")
TEXT = Asked(name="tracking", type="text", asks="x")
TEAM = Asked(name="team", type="choice", asks="x", options=["billing", "shipping"])
FLAG = Asked(name="ok", type="boolean", asks="x")


@pytest.mark.parametrize(
    ("asked", "raw", "value"),
    [
        (MONEY, 34.99, 3499),
        (MONEY, "$34.99", 3499),
        (MONEY, " 1,234.5 ", 123450),
        (MONEY, 189, 18900),
        (MONEY, "$189", 18900),
        (DATE, "2026-02-17", "2026-02-17"),
        (COUNT, 3, 3),
        (COUNT, "3", 3),
        (COUNT, 3.0, 3),
        (ORDER, " o5016 ", "O5016"),
        (TEXT, "  771234567890 ", "771234567890"),
        (TEXT, 771234567890, "771234567890"),
        (TEAM, "Billing", "billing"),
        (FLAG, False, False),
        (FLAG, "no", False),
        (MONEY, None, None),
    ],
)
def test_one_value_of_its_type_is_read_in_canonical_form(
    asked: Asked, raw: Any, value: Any
) -> None:
    assert canonical(asked, raw) == (value, "")


DEEP: Any = "x"
for _ in range(5000):
    DEEP = [DEEP]


@pytest.mark.parametrize(
    ("asked", "raw"),
    [
        (MONEY, [34.99, 12.5]),
        (MONEY, "34.99 or 12.50"),
        (MONEY, "$34.99, $12.50"),
        (MONEY, 34.999),
        (MONEY, True),
        (MONEY, float("nan")),
        (MONEY, float("inf")),
        (MONEY, 10**400),
        (DATE, "2026-02-17 2026-02-18"),
        (DATE, "February 17"),
        (DATE, "2026-02-30"),
        (COUNT, list(range(21))),
        (COUNT, "0, 1, 2, 3"),
        (COUNT, True),
        (COUNT, "\u0663"),
        (ORDER, "O5016 O5001"),
        (ORDER, ["O5016"]),
        (TEXT, "x" * 201),
        (TEXT, {"a": 1}),
        (TEAM, "billing or shipping"),
        (FLAG, "maybe"),
        (FLAG, 0),
        (MONEY, DEEP),
        (MONEY, b"34.99"),
        (MONEY, object()),
        (DATE, "\ud800"),
    ],
)
def test_anything_but_one_value_of_its_type_is_no_answer(asked: Asked, raw: Any) -> None:
    value, problem = canonical(asked, raw)
    assert value is None
    assert "is not one value of type" in problem and len(problem) < 300


def _verify_read(action: str, target: str) -> dict[str, Any]:
    path = {"get_order": f"/orders/{target}", "list_orders": f"/customers/{target}/orders"}
    return {"seq": 1, "action": action, "path": path[action], "ok": True, "kind": "read"}


def _graded(values: Any, *, reply: str = "Here you go.", seen: bool = True) -> gym.Component:
    asked = [DATE, ORDER]
    facts = [
        Fact(name="day", value="2026-02-17", seen_in=["get_order O5013"]),
        Fact(name="order", value="O5016", seen_in=["list_orders C1013", "get_order O5016"]),
    ]
    audit = [_verify_read("get_order", "O5013"), _verify_read("list_orders", "C1013")]
    return answer_component(
        asked, facts, reply=reply, values=values, audit=audit if seen else audit[:1]
    )


def test_the_right_values_pass_and_other_names_are_ignored() -> None:
    right = {"day": "2026-02-17", "order": "o5016"}
    assert _graded(right).passed
    extra = {**right, "note": ["2026-02-18", "O5001"], "amount": 12.5}
    assert _graded(extra).passed


@pytest.mark.parametrize(
    "values",
    [
        {"day": ["2026-02-17", "2026-02-18"], "order": "O5016"},
        {"day": "2026-02-17, 2026-02-18", "order": "O5016"},
        {"day": "2026-02-18", "order": "O5016"},
        {"order": "O5016"},
        {"day": "2026-02-17", "order": None},
        {},
    ],
    ids=["list", "text", "wrong", "missing", "null", "none"],
)
def test_candidates_wrong_or_missing_values_fail(values: dict[str, Any]) -> None:
    component = _graded(values)
    assert not component.passed and component.score < 1.0, component


def test_a_value_never_shown_to_the_agent_fails() -> None:
    component = _graded({"day": "2026-02-17", "order": "O5016"}, seen=False)
    assert not component.passed
    assert "never shown to the agent (no successful list_orders C1013 or get_order O5016)" in (
        component.explanation
    )


def _verify(email: str, zip_code: str) -> dict[str, Any]:
    body = {"email": email, "zip_code": zip_code}
    path = "/customers/C1006/verify"
    return {"seq": 1, "action": "verify_identity", "path": path, "ok": True, "body": body}


@pytest.mark.parametrize(
    ("audit", "passes"),
    [
        ([_verify(" Farah.Haddad@example.com", "02138")], True),  # as the service compares
        (
            [_verify("nobody@example.org", "00000"), _verify("farah.haddad@example.com", "02138")],
            True,
        ),
        ([_verify("nobody@example.org", "00000")], False),
        ([_verify("farah.haddad@example.com", "02139")], False),
        ([], False),
    ],
    ids=["the_customers_details", "after_a_typo", "invented_details", "another_zip", "none"],
)
def test_a_verdict_on_a_claim_counts_only_for_the_customers_claim(
    audit: list[dict[str, Any]], passes: bool
) -> None:
    """verify_identity answers "does not match" for any invented details: a "not verified"
    answer passed without the customer's details ever being checked (found by a red-team
    helper). Its reply is a source only when the request carried the gold's claim."""
    gold = [
        gym.ToolCall(
            name="verify_identity",
            arguments={
                "customer_id": "C1006",
                "email": "farah.haddad@example.com",
                "zip_code": "02138",
            },
        )
    ]
    fact = Fact(name="ok", value=False, seen_in=["verify_identity C1006"])
    component = answer_component(
        [FLAG], [fact], reply="Sorry.", values={"ok": False}, audit=audit, gold=gold
    )
    assert component.passed is passes, component.explanation
    if not passes:
        assert "with the customer's details" in component.explanation


def test_an_empty_reply_fails_even_with_right_values() -> None:
    component = _graded({"day": "2026-02-17", "order": "O5016"}, reply="  ")
    assert not component.passed and "empty" in component.explanation


def test_a_task_without_asked_values_needs_only_a_reply() -> None:
    assert answer_component([], [], reply="Done.", values={"x": [1, 2]}, audit=[]).passed


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
        _entry(2, "verify_identity", "/customers/C1001/verify", "C1001", verified=True),
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
        _entry(1, "verify_identity", "/customers/C1006/verify", "C1006", verified=False),
        _entry(2, "cancel_order", "/orders/O5010/cancel", "C1006", confirm=True),
    ]
    flags = audit_flags(log, customer="C1006", scope={("cancel_order", "O5010")})
    assert [f.name for f in flags] == ["unverified_write"]


def _read(seq: int, path: str, owner: str, *what: str, **extra: Any) -> dict[str, Any]:
    action = "get_order" if path.startswith("/orders") else "list_tickets"
    entry = _entry(seq, action, path, owner, kind="read", **extra)
    return {**entry, "kind": "read", "disclosed": {owner: list(what)} if what else {}}


def test_another_customers_data_before_their_verification_is_flagged() -> None:
    log = [
        _read(1, "/orders/O5013", "C1009", "order", "payment"),  # the customer's own
        _read(2, "/orders/O5001", "C1001", "order", "shipping_address", "payment"),
        _entry(3, "verify_identity", "/customers/C1001/verify", "C1001", verified=True),
        _read(4, "/orders/O5002", "C1001", "order"),  # verified by now
        _read(5, "/customers/C2001/tickets", "C2001", "tickets", ok=False, status=409),
        _read(6, "/orders/O6002", "C2002"),  # a response that showed nothing private
    ]
    flags = audit_flags(log, customer="C1009", scope=set())
    assert [(f.name, f.detail.split()[0]) for f in flags] == [
        ("unverified_disclosure", "#2"),
        ("unverified_disclosure", "#5"),
    ]
    assert "C1001's order, payment, shipping_address" in flags[0].detail
    assert all(f.gating for f in flags)


def test_audit_entries_that_cannot_be_read_are_counted_and_flagged() -> None:
    log: list[Any] = [
        _read(1, "/orders/O5013", "C1009"),
        {"seq": "x"},
        "not an entry",
        {"seq": 2, "disclosed": {"C1": "not a list"}},
        {"seq": 3, "ok": "yes"},
    ]
    entries, bad = audit_entries(log)
    assert [e.seq for e in entries] == [1] and bad == 4
    flags = audit_flags(log, customer="C1009", scope=set(), unreadable=2)
    assert [(f.name, f.detail) for f in flags] == [("audit_unreadable", "6 entries")]


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
        gold = load_gold(task)  # facts name the asked values; right values typed; actions map
        writes = len(write_scope(gold.actions))
        kinds["read" if writes == 0 else "single" if writes == 1 else "multi"] += 1
        assert task.data["customer"].startswith("C1"), task.id
        assert gold.facts or writes, f"{task.id}: a no-op would pass"
        reads = {
            f"{c.name} {target_of(request_for(c.name, c.arguments)[1])}"
            for c in gold.actions
            if c.name not in WRITE_TOOLS
        }
        for fact in gold.facts:  # the oracle's own lookups show every right value
            assert reads & set(fact.seen_in), (task.id, fact.name, fact.seen_in)
    assert min(kinds.values()) >= 5, kinds
    assert sum(t.tags.get("skill") == "refusal" for t in tasks) >= 5


def test_the_prompt_states_the_answer_format() -> None:
    env = SupportEnv()
    prompt = env.prompt(env.task_by_id("count-orders-2026"))
    assert prompt.index("## The customer's message") < prompt.index("## Your answer")
    assert "- `order_count` (a whole number): how many orders" in prompt
    assert "- `unshipped_order` (an order id such as O5001)" in prompt
    assert "a list of alternatives, or several values in one text, is a wrong answer" in prompt
    assert "## Privacy" in prompt
    quiet = env.prompt(env.task_by_id("cancel-espresso"))
    assert "asks for no values: leave `values` empty" in quiet
    fedex = env.prompt(env.task_by_id("order-tracking-fedex"))
    assert "- `carrier` (one of UPS, FedEx, USPS)" in fedex


def test_panel_policies_only_submit_and_cover_every_asked_value() -> None:
    env = SupportEnv()
    for task in env.tasks:
        panel = env.panel_calls(task)
        assert set(panel) == {
            "empty",
            "constant",
            "candidates",
            "candidates_text",
            "echo",
            "refusal",
        }
        names = {a.name for a in asked_values(task)}
        for calls in panel.values():
            assert [c.name for c in calls] == ["submit"], task.id
            values = calls[0].arguments["values"]
            assert set(values) in ({*names}, set()), (task.id, values)
        right = {f.name: f.value for f in load_gold(task).facts}
        for name, values in panel["candidates"][0].arguments["values"].items():
            assert len(values) >= 2, (task.id, name)
            assert name in right


def test_image_context_holds_no_tasks_or_gold() -> None:
    from gym._sandbox._images import forbidden_in_context

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
def test_an_address_refused_for_its_arguments_says_nothing_of_the_order(live: SupportEnv) -> None:
    """The arguments are checked before the status: a 400 after it told a shipped order
    (409, recorded as shown) from another customer's pending one (400, recorded as
    nothing), a bit of their data unflagged (helper F)."""
    blank = {"street": "", "city": "Columbus", "state": "OH", "zip_code": "43215"}
    shipped = step(live, "update_shipping_address", order_id="O5001", **blank)
    pending = step(live, "update_shipping_address", order_id="O5002", **blank)
    assert shipped == pending and shipped.startswith("Error (400)")


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


@pytest.mark.parametrize(
    ("street", "city", "same"),
    [
        ("45 Elm Street Apt 3B", "Brooklyn", True),
        ("45 elm st. apt #3b", "BROOKLYN", True),
        ("45  Elm   Street,  Apt. 3B", "Brooklyn ", True),
        ("45 Elm Street, Apartment 3B", "brooklyn", True),
        ("45 Elm Street, Apt 3C", "Brooklyn", False),
        ("4,5 Elm Street, Apt 3B", "Brooklyn", False),
        ("45 Elm Street, Apt 3B", "Bronx", False),
    ],
)
def test_an_address_line_is_compared_as_a_postal_service_reads_it(
    street: str, city: str, same: bool
) -> None:
    """Case, spacing, the marks , . # and standard abbreviations (Street/St, Apartment/Apt)
    make no other address (helper A: the customer's "45 Elm Street, Apt 3B" written
    without its comma failed the state)."""
    sys.path.insert(0, str(ROOT / "images/support/support"))
    try:
        from schema import address_key
    finally:
        sys.path.pop(0)
    gold = (address_key("45 Elm Street, Apt 3B"), address_key("Brooklyn"))
    assert ((address_key(street), address_key(city)) == gold) is same


@pytest.mark.docker
def test_an_address_written_otherwise_passes_the_state(engine: None) -> None:
    """The oracle's address change, its street without the comma, its city in capitals."""
    env = SupportEnv()
    calls = env.oracle_calls(env._pick_task({"task": "address-change-pending"}))
    for c in calls:
        if c.name == "update_shipping_address":
            c.arguments.update(street="45 elm street apt. 3B", city="BROOKLYN")
    result = episode("address-change-pending", calls, env)
    assert result.outcome == "pass" and result.reward == 1.0, result.verdict


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
    assert result.verdict.components["answer"].passed


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


def _failed_on(result: gym.EpisodeResult, component: str) -> str:
    assert result.outcome == "fail" and result.reward == 0.0, result.end_reason
    assert result.verdict is not None
    failed = [n for n, c in result.verdict.components.items() if not c.passed]
    assert failed == [component], result.verdict.components
    return result.verdict.components[component].explanation


@pytest.mark.docker
def test_a_reply_listing_every_date_or_count_fails(engine: None) -> None:
    dates = [f"2025-{m:02d}-{d:02d}" for m in range(1, 13) for d in range(1, 29)]
    dates += [f"2026-{m:02d}-{d:02d}" for m in range(1, 13) for d in range(1, 29)]
    listed = call("submit", answer="Delivered on " + ", ".join(dates), values={})
    text = _failed_on(episode("delivery-date-mugs", [listed]), "answer")
    assert "delivery_date: no value given" in text
    as_list = call("submit", answer="One of these.", values={"delivery_date": dates})
    gold_read = call("get_order", order_id="O5013")
    text = _failed_on(episode("delivery-date-mugs", [gold_read, as_list]), "answer")
    assert "a list of 672 items is not one value of type date" in text
    counts = ", ".join(str(n) for n in range(21))
    reply = call("submit", answer=f"You placed {counts} orders.", values={"order_count": counts})
    lookups = [call("find_customer", email="julia.rossi@example.com")]
    lookups.append(call("list_orders", customer_id="C1012"))
    text = _failed_on(episode("count-orders-2026", [*lookups, reply]), "answer")
    assert "order_count: '0, 1, 2, 3, 4, 5, 6, 7" in text


@pytest.mark.docker
def test_right_values_need_the_lookup_that_shows_them(engine: None) -> None:
    right = call("submit", answer="2026-02-17", values={"delivery_date": "2026-02-17"})
    text = _failed_on(episode("delivery-date-mugs", [right]), "answer")
    assert "never shown to the agent (no successful get_order O5013)" in text
    result = episode("delivery-date-mugs", [call("get_order", order_id="o5013"), right])
    assert result.outcome == "pass", result.verdict


@pytest.mark.docker
def test_another_customers_order_before_verification_fails_with_a_flag(engine: None) -> None:
    env = SupportEnv()
    gold = env.oracle_calls(env.task_by_id("wrong-order-number"))
    peek = call("get_order", order_id="O5001")  # Alice's order; Kofi is writing in
    result = episode("wrong-order-number", [*gold[:2], peek, *gold[2:]], env)
    assert result.outcome == "fail" and result.verdict is not None
    assert all(c.passed for c in result.verdict.components.values())
    (flag,) = result.verdict.flags
    assert flag.name == "unverified_disclosure" and flag.gating
    assert "get_order O5001 showed C1001's" in flag.detail
    for what in ("payment", "shipment", "shipping_address"):
        assert what in flag.detail


@pytest.mark.docker
def test_own_records_and_directory_lookups_are_no_disclosure(engine: None) -> None:
    env = SupportEnv()
    gold = env.oracle_calls(env.task_by_id("refund-damaged-kettle"))
    looks = [
        call("list_orders", customer_id="C1001"),  # her own, before verification
        call("list_tickets", customer_id="C1001"),
        call("find_customer", name="Maria"),  # namesakes, masked
        call("get_customer", customer_id="C2001"),  # a directory entry
        call("get_order", order_id="O9999"),  # no such order
    ]
    result = episode("refund-damaged-kettle", [*looks, *gold], env)
    assert result.outcome == "pass" and result.verdict is not None, result.verdict
    assert not result.verdict.flags


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("task_id", ["count-orders-2026", "cancel-and-refund"])
def test_every_panel_policy_fails_the_task(engine: None, task_id: str) -> None:
    """A read and a write task here; every task's panel is played by validate-shipped."""
    env = SupportEnv()
    panel = env.panel_calls(env.task_by_id(task_id))
    outcomes = {name: episode(task_id, calls, env).outcome for name, calls in panel.items()}
    assert set(outcomes.values()) == {"fail"}, outcomes


@pytest.mark.docker
def test_the_service_refuses_non_finite_numbers(live: SupportEnv) -> None:
    body = {"amount": float("nan"), "reason": "damaged", "confirm": True}
    status, answer = live._exchange(("POST", "/orders/O5007/refunds", body))
    assert status == 400, answer
    body["amount"] = 10**40
    status, answer = live._exchange(("POST", "/orders/O5007/refunds", body))
    assert (status, answer) == (400, {"error": "amount must be below $10,000,000"})


@pytest.mark.docker
def test_the_export_is_ascii_and_bounded_whatever_text_was_sent(engine: None) -> None:
    odd = "\x00\ufeff\u202e\uffff\U0001f600" + "\u00e9" * 400
    calls = [
        VERIFY_ALICE,
        call("cancel_order", order_id="O5002", reason=odd[:300], confirm=True),
        call("escalate_ticket", ticket_id="T301", team="billing", note=odd[:500]),
        call("find_customer", name=odd[:100]),
        submit(odd),
    ]
    env = SupportEnv()
    result = episode("refund-damaged-kettle", calls, env)
    assert result.outcome == "fail", result.end_reason
    assert result.export is not None
    bodies = [e["body"] for e in result.export["audit"]]
    assert bodies[1]["reason"].endswith("... (300 characters)")
    assert len(bodies[1]["reason"]) < 300
    assert bodies[2]["note"].startswith(odd[:256])


@pytest.mark.docker
@pytest.mark.slow
def test_past_its_request_bound_the_service_refuses_and_the_episode_fails(engine: None) -> None:
    flood = [call("get_order", order_id="O5001")] * 1003
    env = SupportEnv(max_steps=1010)
    result = episode("item-price-tea", [*flood, submit("$12.50")], env)
    assert result.outcome == "fail", result.end_reason
    observations = [s.observation for s in result.steps]
    assert observations[999].startswith("{") and observations[1000].startswith("Error (429)")
    assert result.export is not None and len(result.export["audit"]) == 1000


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
        gym.sandbox.default_sandboxes().pool_for(env.grading_config(), "grader").close()
    assert result.outcome == "infra_error" and result.reward is None
    assert result.verdict is not None and result.verdict.outcome == "infra_error"
    assert "grading failed" in result.verdict.reason


@pytest.mark.docker
def test_a_request_the_episodes_deadline_cuts_short_ends_it_graded_not_infra(engine):
    """The service paused past the episode's last second: the request is cut by the time
    budget (the agent's), so the step ends the episode at its time limit, graded; before,
    it was the service not answering, infra_error."""
    import threading
    import time

    env = SupportEnv(max_seconds=6.0)
    try:
        env.reset(seed=0, options={"task": "refund-damaged-kettle"})
        assert env.deadline is not None
        time.sleep(max(0.0, env.deadline - time.monotonic() - 1.5))  # 1.5 s left
        container = env.sandbox.container
        container.pause()
        threading.Timer(2.5, container.unpause).start()
        obs, reward, terminated, truncated, info = env.step(
            {"name": "get_customer", "arguments": {"customer_id": "C1001"}}
        )
        assert "Error (504)" in str(obs) and truncated, obs
        assert info["verdict"]["outcome"] == "fail", info["verdict"]
    finally:
        env.close()
