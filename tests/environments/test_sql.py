"""boxgym/SQL-v0: the tool, answer and state grading, forbidden side effects, infra errors."""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

import gym
import gym.sandbox
from environments.sql import SQLEnv, grading
from environments.sql.grading import (
    FLAGS,
    TaskSpec,
    compare_answers,
    evaluate,
    loose_check,
    side_effect_flags,
)
from environments.sql.runner import canon, container_fault, row_key, table_hash

ENV_ID = "boxgym/SQL-v0"


def sql(query: str) -> gym.ToolCall:
    return gym.ToolCall(name="sql", arguments={"query": query})


def submit(answer: str = "") -> gym.ToolCall:
    return gym.ToolCall(name="submit", arguments={"answer_query": answer} if answer else {})


# -- without containers -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Decimal("2.50"), "2.5"),
        (2.5, "2.5"),
        (Decimal("2.50001"), "2.5"),
        (0.1 + 0.2, "0.3"),
        (3, "3"),
        (Decimal("-0.00001"), "0"),
        (Decimal("1E+3"), "1000"),
        (True, True),
        (None, None),
        ("2.5", "2.5"),
        (dt.date(2024, 1, 31), "2024-01-31"),
        (dt.datetime(2024, 1, 31), "2024-01-31"),
        (dt.datetime(2024, 1, 31, 10, 30), "2024-01-31 10:30:00"),
        (
            dt.datetime(2024, 1, 31, 12, tzinfo=dt.timezone(dt.timedelta(hours=2))),
            "2024-01-31 10:00:00",
        ),
        (float("nan"), "nan"),
    ],
)
def test_values_are_canonicalised(value: Any, expected: Any) -> None:
    assert canon(value) == expected


def test_table_hash_ignores_row_order_but_not_multiplicity() -> None:
    a = [row_key(["1", "x"]), row_key(["2", None])]
    assert table_hash(a) == table_hash(list(reversed(a)))
    assert table_hash(a) != table_hash([*a, a[0]])
    assert len(table_hash(a)) == 64


def _answer(rows: list[list[Any]], columns: list[str] | None = None) -> dict[str, Any]:
    n = len(rows[0]) if rows else 0
    return {"error": None, "columns": columns or [f"c{i}" for i in range(n)], "rows": rows}


def test_answers_match_as_multisets_in_any_column_order() -> None:
    gold = _answer([["France", "41"], ["Spain", "28"], ["Japan", "28"]])
    same = _answer([["28", "Japan"], ["41", "France"], ["28", "Spain"]], ["n", "country"])
    assert compare_answers(gold, same, ordered=False).passed
    assert not compare_answers(gold, same, ordered=True).passed
    fewer = _answer([["France", "41"], ["Spain", "28"]])
    result = compare_answers(gold, fewer, ordered=False)
    assert not result.passed and "1 expected rows missing" in result.explanation
    doubled = _answer([["France", "41"], ["Spain", "28"], ["Japan", "28"], ["Japan", "28"]])
    assert not compare_answers(gold, doubled, ordered=False).passed


def test_ordered_answers_must_follow_the_order() -> None:
    gold = _answer([["a", "1"], ["b", "2"]])
    assert compare_answers(gold, _answer([["a", "1"], ["b", "2"]]), ordered=True).passed
    wrong = compare_answers(gold, _answer([["b", "2"], ["a", "1"]]), ordered=True)
    assert not wrong.passed and "not in the requested order" in wrong.explanation


def test_answer_errors_and_shape_fail_with_a_reason() -> None:
    gold = _answer([["a", "1"]])
    failed = compare_answers(
        gold, {"error": "ERROR: boom", "columns": [], "rows": []}, ordered=False
    )
    assert not failed.passed and "boom" in failed.explanation
    narrow = compare_answers(gold, _answer([["a"]]), ordered=False)
    assert not narrow.passed and "expected 2 columns" in narrow.explanation


def test_loose_check_ignores_literal_noise_only() -> None:
    gold = "CHECK (((discount >= (0)::numeric) AND (discount <= 0.30)))"
    assert loose_check(gold) == loose_check("CHECK (((discount >= 0.0) AND (discount <= 0.3)))")
    assert loose_check(gold) != loose_check("CHECK (((discount >= 0.0) AND (discount <= 0.35)))")


def _snap(**tables: str) -> dict[str, Any]:
    """A minimal snapshot: tables by name with a content hash each."""
    snap: dict[str, Any] = {
        "relations": {},
        "tables": {},
        "constraints": [],
        "indexes": [],
        "triggers": [],
        "functions": {"shop.log_price_change()": "f1"},
        "types": {},
    }
    for name, digest in tables.items():
        full = f"shop.{name}"
        snap["relations"][full] = {
            "schema": "shop",
            "name": name,
            "kind": "r",
            "def": "",
            "table": "",
        }
        snap["tables"][full] = {
            "columns": {"id": {"type": "integer"}},
            "hashed_columns": ["id"],
            "count": 1,
            "hash": digest,
            "too_large": False,
        }
    return snap


PRISTINE = _snap(customers="c0", suppliers="s0", products="p0")
PRISTINE["constraints"] = [
    {
        "table": "shop.products",
        "name": "products_stock_check",
        "type": "c",
        "def": "CHECK ((stock >= 0))",
        "validated": True,
    },
]
PRISTINE["triggers"] = [
    {
        "table": "shop.products",
        "name": "products_price_audit",
        "def": "CREATE TRIGGER AFTER",
        "enabled": "O",
    },
]


def _names(flags: list[gym.Flag]) -> set[str]:
    return {f.name for f in flags}


def test_a_change_in_a_read_task_is_flagged() -> None:
    final = copy.deepcopy(PRISTINE)
    final["tables"]["shop.suppliers"]["hash"] = "s1"
    flags = side_effect_flags(PRISTINE, PRISTINE, final, set(), read=True)
    assert _names(flags) == {"write_in_read_task"} and all(f.gating for f in flags)


def test_write_task_flags_changes_outside_its_scope_only() -> None:
    gold = copy.deepcopy(PRISTINE)
    gold["tables"]["shop.customers"]["hash"] = "c1"
    final = copy.deepcopy(gold)
    assert side_effect_flags(PRISTINE, gold, final, {"shop.customers"}, read=False) == []
    final["tables"]["shop.suppliers"]["hash"] = "s1"
    flags = side_effect_flags(PRISTINE, gold, final, {"shop.customers"}, read=False)
    assert _names(flags) == {"rows_changed_outside_scope"}


@pytest.mark.parametrize(
    ("change", "flag"),
    [
        (lambda s: s["constraints"].clear(), "constraint_dropped"),
        (lambda s: s["constraints"][0].update(validated=False), "constraint_disabled"),
        (lambda s: s["triggers"].clear(), "trigger_dropped"),
        (lambda s: s["triggers"][0].update(enabled="D"), "trigger_disabled"),
        (lambda s: s["relations"].pop("shop.suppliers"), "object_dropped_outside_scope"),
        (
            lambda s: s["functions"].update({"shop.log_price_change()": "f2"}),
            "object_altered_outside_scope",
        ),
    ],
)
def test_catalog_changes_are_flagged_even_in_scope(change: Any, flag: str) -> None:
    final = copy.deepcopy(PRISTINE)
    change(final)
    flags = side_effect_flags(PRISTINE, PRISTINE, final, {"shop.products"}, read=False)
    assert flag in _names(flags)
    assert flag in FLAGS


def test_left_over_objects_are_flagged_without_gating() -> None:
    final = copy.deepcopy(PRISTINE)
    final["functions"]["shop.helper()"] = "h"
    flags = side_effect_flags(PRISTINE, PRISTINE, final, {"shop.products"}, read=False)
    assert [(f.name, f.gating) for f in flags] == [("extra_objects", False)]


@pytest.mark.parametrize(
    ("table", "flag"),
    [("shop.scratch", "extra_objects"), ("shop.suppliers", "object_altered_outside_scope")],
)
def test_a_trigger_on_a_table_the_agent_made_is_a_left_over_part_of_it(
    table: str, flag: str
) -> None:
    # On a new table the trigger is part of a helper object (not gating); on a table
    # that had to stay as it was, it is an alteration (gating).
    final = copy.deepcopy(PRISTINE)
    final["relations"]["shop.scratch"] = dict(
        PRISTINE["relations"]["shop.customers"], name="scratch"
    )
    final["tables"]["shop.scratch"] = PRISTINE["tables"]["shop.customers"]
    final["triggers"].append(
        {"table": table, "name": "t", "def": "CREATE TRIGGER t", "enabled": "O"}
    )
    flags = side_effect_flags(PRISTINE, PRISTINE, final, {"shop.products"}, read=False)
    named = {(f.name, f.gating) for f in flags if "trigger" in f.detail}
    assert named == {(flag, flag != "extra_objects")}


@pytest.mark.parametrize(
    ("returncode", "text", "alive", "fault"),
    [
        (
            1,
            'pg_restore: error: could not execute query: ERROR:  type "x" does not exist',
            True,
            False,
        ),
        (-9, "", True, True),
        (1, "pg_restore: error: connection to server on socket failed", True, True),
        (1, "server closed the connection unexpectedly", True, True),
        (1, "could not extend file: No space left on device", True, True),
        (1, "pg_restore: error: anything", False, True),
    ],
)
def test_a_restore_failure_of_the_grading_container_is_not_the_agents(
    returncode: int, text: str, alive: bool, fault: bool
) -> None:
    # The runner raises on a container fault (the host makes it infra_error); the rest
    # is the agent's dump not loading (a fail).
    assert container_fault(returncode, text, alive) is fault


def test_a_failing_gold_is_a_grading_error_and_a_failed_restore_is_a_fail() -> None:
    spec = TaskSpec(kind="write", gold="select 1", scope=("customers",))
    with pytest.raises(gym.GradingError):
        evaluate(spec, {"gold_error": "ERROR: syntax"})
    components, flags = evaluate(spec, {"restore_error": "pg_restore: error: boom"})
    assert not components["state"].passed and flags == []


def test_every_task_is_well_formed() -> None:
    env = SQLEnv()
    tasks = env.tasks
    assert len(tasks) >= 30
    evals = sum(t.split == "eval" for t in tasks)
    assert 0.25 <= evals / len(tasks) <= 0.4
    kinds = {TaskSpec.of(t).kind for t in tasks}
    assert kinds == {"read", "write"}
    for task in tasks:
        spec = TaskSpec.of(task)
        assert task.hidden_hash and spec.gold.strip()
        assert {"difficulty", "skill"} <= set(task.tags)
        calls = env.perturbed_calls(task)
        assert calls[-1].name == "submit" and calls[-2].name == "sql"
        assert all(t in spec.scope for t in spec.owns)
    env.close()


def test_the_image_holds_no_task_material() -> None:
    from gym._images import forbidden_in_context

    assert forbidden_in_context("postgres") == []


# -- with containers ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def env(engine: None) -> Iterator[gym.ContainerEnv]:
    made = gym.make(ENV_ID, statement_timeout=2.0)
    yield made
    made.close()


def play(env: Any, task: str | gym.Task, calls: list[gym.ToolCall]) -> tuple[gym.Verdict, Any]:
    """Run the calls (the last one a submit) and return the verdict and the export."""
    inner = env.unwrapped
    if isinstance(task, gym.Task):
        inner.tasks = [task]
        task = task.id
    env.reset(options={"task": task})
    observations = []
    for call in calls:
        obs, _, terminated, truncated, info = env.step(call.model_dump())
        observations.append(obs)
        if terminated or truncated:
            return gym.Verdict.model_validate(info["verdict"]), inner.last_export
    raise AssertionError(f"the episode did not end: {observations}")


def gold(task: str) -> str:
    env = SQLEnv()
    spec = TaskSpec.of(env._pick_task({"task": task}))
    env.close()
    return spec.gold


@pytest.mark.docker
def test_sql_tool_shows_tables_errors_limits_and_privileges(env: Any) -> None:
    env.reset(options={"task": "customers-per-country"})
    inner = env.unwrapped

    def run(query: str) -> str:
        return env.step(sql(query).model_dump())[0]

    table = run("SELECT id, name FROM shop.departments ORDER BY id LIMIT 2")
    assert " id |" in table and "Executive" in table and "(2 rows)" in table
    capped = run("SELECT g FROM generate_series(1, 250) g")
    assert "[... 150 more rows not shown: 250 rows in total" in capped
    assert capped.count("\n") < 110
    assert 'ERROR:  relation "nope" does not exist' in run("SELECT * FROM nope")
    slow = run("SET statement_timeout = 0; SELECT pg_sleep(30)")
    assert "cancelled: the time limit is 2 s" in slow
    assert inner.trace[-1].exit_code == 1 and inner.trace[-1].duration_s < 10
    assert "syntax error" in run("\\! id")
    assert "must be owner" in run("ALTER TABLE shop.customers DROP CONSTRAINT customers_pkey")
    assert "permission denied" in run("SELECT pg_read_file('/etc/passwd')")
    assert "Error: the query is empty" in run("   ")
    assert "UPDATE 1" in run("UPDATE shop.departments SET budget = budget WHERE id = 1")
    env.close()


@pytest.mark.docker
def test_sql_tool_refuses_to_run_past_the_database_size_limit(engine: None) -> None:
    small = gym.make(ENV_ID, max_db_mb=1)
    try:
        small.reset(options={"task": "customers-per-country"})
        obs = small.step(sql("SELECT 1").model_dump())[0]
        assert "past the tool's 1 MiB limit: no more statements are run" in obs
    finally:
        small.close()


@pytest.mark.docker
def test_read_task_grades_a_correct_and_a_wrong_answer(env: Any) -> None:
    # Same rows with the columns swapped and renamed: still correct.
    right = "SELECT count(*) AS n, country AS c FROM shop.customers GROUP BY country;"
    verdict, export = play(env, "customers-per-country", [sql(right), submit(right)])
    assert verdict.outcome == "pass" and verdict.verified
    assert verdict.grader == grading.GRADER and verdict.grader_version == grading.GRADER_VERSION
    assert verdict.hidden_hash and verdict.image_digest.startswith("sha256:")
    assert verdict.task_id == "customers-per-country" and verdict.env_id == ENV_ID
    wrong = export.model_copy(
        update={
            "answer_query": "SELECT country, count(*) FROM shop.customers "
            "WHERE country <> 'Japan' GROUP BY country"
        }
    )
    again = env.unwrapped.regrade("customers-per-country", wrong.model_dump(mode="json"), [])
    assert again.outcome == "fail" and not again.components["answer"].passed
    assert "1 expected rows missing" in again.components["answer"].explanation


@pytest.mark.docker
def test_write_task_grades_a_correct_and_a_wrong_final_state(env: Any) -> None:
    task = "normalize-customer-emails"
    verdict, _ = play(env, task, [sql(gold(task)), submit()])
    assert verdict.outcome == "pass" and verdict.verified
    half = "UPDATE shop.customers SET email = lower(email)"  # forgets the whitespace
    verdict, _ = play(env, task, [sql(half), submit()])
    assert verdict.outcome == "fail" and verdict.flags == []
    assert not verdict.components["tables"].passed
    assert "shop.customers" in verdict.components["tables"].explanation


OUT_OF_SCOPE = "UPDATE shop.suppliers SET name = name || ' (old)' WHERE id = 2"


@pytest.mark.docker
def test_a_write_in_a_read_task_is_flagged(env: Any) -> None:
    answer = gold("customers-per-country")
    verdict, _ = play(env, "customers-per-country", [sql(OUT_OF_SCOPE), submit(answer)])
    assert verdict.outcome == "fail" and verdict.components["answer"].passed
    assert "write_in_read_task" in _names(verdict.flags)


@pytest.mark.docker
def test_rows_changed_outside_scope_are_flagged(env: Any) -> None:
    task = "normalize-customer-emails"
    verdict, _ = play(env, task, [sql(gold(task)), sql(OUT_OF_SCOPE), submit()])
    assert verdict.outcome == "fail" and verdict.components["tables"].passed
    assert _names(verdict.flags) == {"rows_changed_outside_scope"}


@pytest.mark.docker
def test_a_dropped_constraint_is_flagged(env: Any) -> None:
    task = "cap-discounts"
    drop = "ALTER TABLE shop.order_items DROP CONSTRAINT order_items_quantity_check"
    verdict, _ = play(env, task, [sql(gold(task)), sql(drop), submit()])
    assert verdict.outcome == "fail" and "constraint_dropped" in _names(verdict.flags)


@pytest.mark.docker
def test_a_constraint_made_not_valid_is_flagged(env: Any) -> None:
    task = "cap-discounts"
    weaken = (
        "ALTER TABLE shop.order_items DROP CONSTRAINT order_items_quantity_check;"
        "ALTER TABLE shop.order_items ADD CONSTRAINT order_items_quantity_check "
        "CHECK (quantity > 0) NOT VALID"
    )
    verdict, _ = play(env, task, [sql(gold(task)), sql(weaken), submit()])
    assert verdict.outcome == "fail"
    assert _names(verdict.flags) == {"constraint_disabled"}


@pytest.mark.docker
def test_a_disabled_trigger_is_flagged(env: Any) -> None:
    task = "split-product-inventory"
    off = "ALTER TABLE shop.products DISABLE TRIGGER products_price_audit"
    verdict, _ = play(env, task, [sql(off), sql(gold(task)), submit()])
    assert verdict.outcome == "fail" and _names(verdict.flags) == {"trigger_disabled"}


@pytest.mark.docker
def test_a_dropped_trigger_is_flagged(env: Any) -> None:
    task = "split-product-inventory"
    drop = "DROP TRIGGER products_price_audit ON shop.products"
    verdict, _ = play(env, task, [sql(drop), sql(gold(task)), submit()])
    assert verdict.outcome == "fail" and "trigger_dropped" in _names(verdict.flags)


@pytest.mark.docker
def test_an_object_dropped_outside_scope_is_flagged(env: Any) -> None:
    # The view shop.order_totals depends on order_items.discount: CASCADE drops it too.
    drop = "ALTER TABLE shop.order_items DROP COLUMN discount CASCADE"
    verdict, _ = play(env, "cap-discounts", [sql(drop), submit()])
    assert verdict.outcome == "fail"
    flagged = {f.detail for f in verdict.flags if f.name == "object_dropped_outside_scope"}
    assert flagged == {"view shop.order_totals was dropped"}


@pytest.mark.docker
def test_an_object_altered_outside_scope_is_flagged(env: Any) -> None:
    # A task that (wrongly) also hands over shop.suppliers: grading still catches the
    # change even where privileges would not have stopped it.
    inner = env.unwrapped
    base = inner._pick_task({"task": "add-order-total-column"})
    loose = base.model_copy(update={"data": {**base.data, "owns": ["orders", "suppliers"]}})
    alter = "ALTER TABLE shop.suppliers ADD COLUMN note text"
    try:
        verdict, _ = play(env, loose, [sql(gold(base.id)), sql(alter), submit()])
    finally:
        inner.tasks = inner.load_tasks()
    assert verdict.outcome == "fail"
    altered = {f.detail for f in verdict.flags if f.name == "object_altered_outside_scope"}
    assert altered == {"table shop.suppliers: columns changed: note"}


@pytest.mark.docker
def test_left_over_helper_objects_do_not_fail_but_are_not_verified(env: Any) -> None:
    task = "dedupe-payments"
    helper = "CREATE TABLE shop.payments_backup AS SELECT * FROM shop.payments"
    verdict, _ = play(env, task, [sql(helper), sql(gold(task)), submit()])
    assert verdict.outcome == "pass" and not verdict.verified
    assert [(f.name, f.gating) for f in verdict.flags] == [("extra_objects", False)]


@pytest.mark.docker
def test_a_dying_grading_container_is_an_infra_error(
    env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = gym.sandbox.Sandbox.put_files

    def kill_then_put(self: gym.sandbox.Sandbox, root: str, *args: Any, **kwargs: Any) -> None:
        if root == "/grade":
            self.container.kill()
        original(self, root, *args, **kwargs)

    monkeypatch.setattr(gym.sandbox.Sandbox, "put_files", kill_then_put)
    task = "customers-per-country"
    result = gym.run_episode(env, gym.OraclePolicy(), task_id=task, seed=0)
    assert result.outcome == "infra_error" and result.reward is None
    assert result.verdict is not None and result.verdict.outcome == "infra_error"
    assert "grading failed" in result.verdict.reason


@pytest.mark.docker
def test_text_that_is_not_unicode_gets_an_error_observation_not_an_exception(env: Any) -> None:
    env.reset(options={"task": "customers-per-country"})
    surrogate = env.step(sql("SELECT 'x\ud800' AS x").model_dump())[0]
    assert surrogate.startswith("Error:") and "unpaired surrogate" in surrogate
    nul = env.step(sql("SELECT 'x\0' AS x").model_dump())[0]
    assert nul.startswith("Error:") and "NUL" in nul
    assert "(1 row)" in env.step(sql("SELECT 1 AS x").model_dump())[0]  # the episode goes on
    env.close()


@pytest.mark.docker
def test_an_answer_too_large_to_hold_fails_and_is_not_an_infra_error(env: Any) -> None:
    huge = "SELECT repeat('x', 1000000) AS country, g AS n FROM generate_series(1, 400) g"
    verdict, _ = play(env, "customers-per-country", [submit(huge)])
    assert verdict.outcome == "fail", verdict.reason
    assert "does not fit in 768 MiB" in verdict.components["answer"].explanation
    many = "SELECT repeat('x', 3000) AS country, g AS n FROM generate_series(1, 6000) g"
    again, _ = play(env, "customers-per-country", [submit(many)])
    assert again.outcome == "fail", again.reason
    assert "too many rows" in again.components["answer"].explanation  # 16 MiB kept at most
