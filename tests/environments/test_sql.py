"""boxgym/SQL-v0: the tool, answer and state grading, forbidden side effects, infra errors."""

from __future__ import annotations

import copy
import datetime as dt
import time
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

import gym
import gym.sandbox
from environments.sql import SQLEnv, grading
from environments.sql.checks import conjuncts, holds
from environments.sql.grading import (
    FLAGS,
    HOST_DISK_MIN_MB,
    TaskSpec,
    compare_answers,
    evaluate,
    parse_export,
    role_flags,
    side_effect_flags,
)
from environments.sql.panel import READ_PANEL, WRITE_PANEL
from environments.sql.runner import (
    CENSUS_EXTRA,
    LIMITS,
    canon,
    canon_text,
    over_limits,
    row_digest,
    row_key,
    table_hash,
)

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


def test_numbers_past_28_digits_keep_every_digit() -> None:
    """Decimal's default precision is 28 digits: under it two 32-digit numbers that differ
    in their last digits read as one, and a 27-digit number lost its decimals."""
    big = "12345678901234567890123456789012"
    assert canon(Decimal(big)) == big != canon(Decimal(big[:-1] + "9"))
    assert canon_text("N", big) == big
    assert canon_text("N", big + ".00005") == big  # half-even at 4 places, then no zeros
    assert canon_text("N", "123456789012345678901234567.12346") == (
        "123456789012345678901234567.1235"
    )
    assert canon_text("N", "9" * 1000 + ".99995") == "1" + "0" * 1000
    assert canon(Decimal("1E+40")) == "1" + "0" * 40


def test_table_hash_ignores_row_order_but_not_multiplicity() -> None:
    a = [row_digest(row_key(["1", "x"])), row_digest(row_key(["2", None]))]
    assert table_hash(a) == table_hash(list(reversed(a)))
    assert table_hash(a) != table_hash([*a, a[0]])
    assert len(table_hash(a)) == 64


def test_the_fast_paths_of_table_numbers_agree_with_the_rounding() -> None:
    # Integers and decimals of 4 places or fewer skip Decimal: same canonical text.
    import random

    from environments.sql.runner import canon_number

    rng = random.Random(7)
    texts = ["0", "-0.00", "0.50", "10.00", "-12.3400", "99999999999999999999.9999"]
    for _ in range(5000):
        whole = str(rng.randrange(10 ** rng.randrange(1, 20)))
        part = "".join(rng.choices("0123456789", k=rng.randrange(0, 5)))
        texts.append(rng.choice(["", "-"]) + whole + (f".{part}" if part else ""))
    assert [t for t in texts if canon_text("N", t) != canon_number(Decimal(t))] == []


@pytest.mark.parametrize(
    ("category", "text", "expected"),
    [
        ("N", "2.50", "2.5"),
        ("N", "2.50001", "2.5"),
        ("N", "NaN", "NaN"),
        ("N", "$1.00", "$1.00"),  # money: not a plain number, kept as its text
        ("N", "1" + "0" * 5000, "1" + "0" * 5000),
        ("B", "t", True),
        ("B", "f", False),
        ("D", "0044-03-15 BC", "0044-03-15 BC"),
        ("D", "infinity", "infinity"),
        ("D", "10000-01-01", "10000-01-01"),
        ("S", None, None),
    ],
)
def test_table_values_are_read_from_their_text_and_any_text_gives_a_value(
    category: str, text: str | None, expected: Any
) -> None:
    # Values PostgreSQL holds but Python's datetime cannot (years 10000 or BC) made the
    # old snapshot raise in the runner (an infra_error); read as text they are values.
    assert canon_text(category, text) == expected


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


DISCOUNT = {"discount": "numeric(3,2)", "id": "integer"}
"""order_items' columns as the runner reads their types (``format_type``)."""
CAP = "CHECK (((discount >= (0)::numeric) AND (discount <= 0.30)))"
"""The cap-discounts gold's check, as PostgreSQL prints it."""


@pytest.mark.parametrize(
    ("other", "same"),
    [
        ("CHECK (((0 <= discount) AND (0.3 >= discount)))", True),  # halves swapped
        ("CHECK (((discount <= 0.3) AND (discount >= 0)))", True),  # conjuncts swapped
        ("CHECK ((((discount >= 0) AND (discount <= 0.3)) AND (discount >= 0)))", True),
        ("CHECK (((discount >= 0.0) AND (discount <= (0.300)::numeric)))", True),
        ("CHECK (((discount >= '0'::numeric) AND (discount <= '0.30'::numeric)))", True),
        ("CHECK (((discount >= '-0.1'::numeric) AND (discount <= 0.3)))", False),
        ("CHECK (((discount >= 0) AND (discount < 0.3)))", False),
        ("CHECK (((discount > 0) AND (discount <= 0.3)))", False),
        ("CHECK (((discount >= 0) AND (discount <= 0.35)))", False),
        ("CHECK (((discount >= 0) OR (discount <= 0.3)))", False),
        ("CHECK (((discount >= 0) AND ((discount)::integer <= 0.3)))", False),  # rounds
        ("CHECK (((discount >= 0) AND (discount <= (0.3)::real)))", False),  # real's 0.3
        ("CHECK (((discount >= 0) AND (discount <= (0.3)::numeric(1,0))))", False),
        ("CHECK (((discount >= 0) AND (discount <= (0.3)::integer)))", False),  # rounds
        ("CHECK ((discount >= 0))", False),
        ("CHECK (((discount >= 0) AND (discount <= 0.3))) NO INHERIT", False),
        # a guard for NULL, which the check passes anyway
        (
            "CHECK (((discount IS NULL) OR ((discount >= (0)::numeric) AND (discount <= 0.3))))",
            True,
        ),
        ("CHECK ((((discount >= 0) AND (discount <= 0.3)) OR (discount IS NULL)))", True),
        ("CHECK (((id IS NULL) OR ((discount >= 0) AND (discount <= 0.3))))", False),
        ("CHECK (((discount IS NULL) OR (id IS NULL) OR (discount <= 0.3)))", False),
    ],
)
def test_checks_compare_by_identities_of_what_they_refuse(other: str, same: bool) -> None:
    """Conjuncts in any order, a comparison's halves mirrored, a literal's zeros and its
    cast to its column's own type: the same. Anything else that differs (an operator, a
    literal, a column's cast, a literal's cast that rounds or changes its type) is not,
    nor is a check split off its others."""
    assert (conjuncts([other], DISCOUNT) == conjuncts([CAP], DISCOUNT)) is same


def test_checks_of_a_table_are_one_conjunction_whichever_constraints_hold_them() -> None:
    gold = conjuncts([CAP], DISCOUNT)
    assert conjuncts(["CHECK ((0.3 >= discount))", "CHECK ((discount >= 0))"], DISCOUNT) == gold
    assert conjuncts(["CHECK ((0.3 >= discount))"], DISCOUNT) < gold


def test_whether_a_check_takes_null_is_moot_on_a_not_null_column() -> None:
    """``discount IS NOT NULL AND ...`` failed correct work on a NOT NULL column (a helper);
    on a column that takes NULL it is still another check."""
    refusing = "CHECK ((((discount IS NOT NULL) AND (discount >= 0)) AND (discount <= 0.3)))"
    declared = frozenset({"discount"})
    assert conjuncts([refusing], DISCOUNT, declared) == conjuncts([CAP], DISCOUNT, declared)
    assert conjuncts(["CHECK ((discount IS NOT NULL))"], DISCOUNT, declared) == frozenset()
    assert conjuncts([refusing], DISCOUNT) != conjuncts([CAP], DISCOUNT)
    assert "discount IS NULL" in conjuncts(["CHECK ((discount IS NULL))"], DISCOUNT, declared)


def test_a_literals_cast_is_dropped_only_against_a_column_of_its_type() -> None:
    """Without the column's type, or against another type, the cast stays."""
    assert conjuncts([CAP]) != conjuncts(["CHECK (((discount >= 0) AND (discount <= 0.3)))"])
    text = {"discount": "text"}
    assert conjuncts([CAP], text) != conjuncts(
        ["CHECK (((discount >= 0) AND (discount <= 0.3)))"], text
    )


NUMBERS = {
    "i": "integer",
    "s": "smallint",
    "b": "bigint",
    "n": "numeric",
    "d": "numeric(3,2)",
    "x": "integer",
    "t": "text",
}
"""Columns of every number type a check on one column is decided for, and two others."""


@pytest.mark.parametrize(
    ("left", "right", "same"),
    [
        # the false fails of stop 52, each printed by PostgreSQL 15
        ("CHECK ((i >= 0))", "CHECK ((i > '-1'::integer))", True),  # integers: no value between
        ("CHECK ((i >= 0))", "CHECK (((i)::numeric >= 0.0))", True),
        ("CHECK ((i >= 0))", "CHECK ((i >= (0)::bigint))", True),
        ("CHECK ((d >= (0)::numeric))", "CHECK ((d >= (0)::numeric(3,2)))", True),
        ("CHECK ((d >= (0)::numeric))", "CHECK ((d >= '0'::numeric))", True),
        (
            "CHECK (((d >= (0)::numeric) AND (d <= 0.3)))",
            "CHECK ((((d >= 0.3) AND (d <= (0)::numeric)) OR ((d >= (0)::numeric) AND "
            "(d <= 0.3))))",  # BETWEEN SYMMETRIC 0.3 AND 0
            True,
        ),
        ("CHECK (((d >= 0) AND (d <= 0.3)))", "CHECK ((NOT ((d < 0) OR (d > 0.3))))", True),
        ("CHECK ((d >= 0))", "CHECK (((d IS NULL) OR (d IS NULL) OR (d >= 0)))", True),
        # a list of integers is its range; a value left out is a gap
        ("CHECK ((i = ANY (ARRAY[1, 2, 3])))", "CHECK (((i >= 1) AND (i <= 3)))", True),
        ("CHECK ((i = ANY (ARRAY[1, 3])))", "CHECK ((i = ANY (ARRAY[3, 1, 1])))", True),
        ("CHECK ((i <> ALL (ARRAY[5])))", "CHECK (((i < 5) OR (i > 5)))", True),
        (
            "CHECK ((((i >= 0) AND (i < 5)) OR ((i > 5) AND (i <= 10))))",
            "CHECK ((((i >= 0) AND (i <= 10)) AND (i <> 5)))",
            True,
        ),
        # past the type's range: only NULL passes; up to its bound: every value
        ("CHECK ((i > 2147483647))", "CHECK ((i IS NULL))", True),
        ("CHECK ((s < 40000))", "CHECK (((s > 0) OR (s <= 0)))", True),
        ("CHECK (((i >= 0) OR (i < 0)))", "CHECK ((i IS NOT NULL))", False),  # NULL passes one
        # casts that round, as PostgreSQL does: half away from zero
        ("CHECK ((n >= ((1.5)::integer)::numeric))", "CHECK ((n >= (2)::numeric))", True),
        (
            "CHECK ((n >= (('-1.5'::numeric)::integer)::numeric))",
            "CHECK ((n >= '-2'::numeric))",
            True,
        ),
        ("CHECK ((n >= '-2.5'::numeric(3,0)))", "CHECK ((n >= '-3'::numeric))", True),
        ("CHECK ((n <= 0.005::numeric(3,2)))", "CHECK ((n <= 0.01))", True),
        ("CHECK ((n <= 0.004::numeric(3,2)))", "CHECK ((n <= (0)::numeric))", True),
        # numeric holds values between any two: no shift of a bound is the same
        ("CHECK ((n >= (0)::numeric))", "CHECK ((n > '-1'::numeric))", False),
        ("CHECK ((d >= (0)::numeric))", "CHECK ((d > '-0.01'::numeric))", False),
        ("CHECK ((n = ANY (ARRAY[1, 2])))", "CHECK (((n >= 1) AND (n <= 2)))", False),
        ("CHECK (((i IS NOT NULL) AND (i >= 0)))", "CHECK ((i >= 0))", False),
        ("CHECK ((NOT (i IS NULL)))", "CHECK ((i IS NOT NULL))", True),
        # a cast of the column that rounds, a cast that fails, a call, another column
        ("CHECK (((n)::integer >= 1))", "CHECK ((n >= (1)::numeric))", False),
        ("CHECK ((s < 70000))", "CHECK ((s < (70000)::smallint))", False),
        ("CHECK ((i >= 0))", "CHECK ((abs(i) >= 0))", False),
        ("CHECK (((i >= 0) AND (x >= 0)))", "CHECK (((i >= 0) OR (x >= 0)))", False),
        ("CHECK ((t >= '0'::text))", "CHECK ((t > '-1'::text))", False),
    ],
)
def test_a_check_on_one_numbers_column_is_the_values_it_takes(
    left: str, right: str, same: bool
) -> None:
    """Checks on one column of an integer type or numeric are decided: written however,
    two that take the same values (and pass NULL alike) are the same check; any that
    differ at one value, or that cannot be computed exactly, are not."""
    assert (conjuncts([left], NUMBERS) == conjuncts([right], NUMBERS)) is same


TEXTS = {"s": "text", "v": "character varying(10)", "c": 'text COLLATE "x-icu"', "i": "integer"}


@pytest.mark.parametrize(
    ("left", "right", "same"),
    [
        # a list is a set: its order and repeats mean nothing
        (
            "CHECK ((s = ANY (ARRAY['a'::text, 'b'::text])))",
            "CHECK ((s = ANY (ARRAY['b'::text, 'a'::text, 'b'::text])))",
            True,
        ),
        (
            "CHECK ((s = ANY (ARRAY['a'::text, 'b'::text])))",
            "CHECK (((s = 'b'::text) OR (s = 'a'::text)))",
            True,
        ),
        (
            "CHECK ((s = ANY (ARRAY['a'::text, 'b'::text])))",
            "CHECK (((s IS NULL) OR (s = ANY (ARRAY['b'::text, 'a'::text]))))",
            True,
        ),
        ("CHECK ((s <> ALL (ARRAY['a'::text])))", "CHECK ((NOT (s = 'a'::text)))", True),
        ("CHECK ((s <> 'a'::text))", "CHECK ((s IS DISTINCT FROM 'a'::text))", True),
        (
            "CHECK (((s = 'a'::text) AND (s IS NOT NULL)))",
            "CHECK ((NOT (s IS DISTINCT FROM 'a'::text)))",
            True,
        ),
        # varchar is compared as text, whichever side holds the cast
        (
            "CHECK (((v)::text = ANY ((ARRAY['a'::character varying, "
            "'b'::character varying])::text[])))",
            "CHECK ((((v)::text = 'b'::text) OR ((v)::text = 'a'::text)))",
            True,
        ),
        # a string differs from another by any byte; NULL passes one and not the other
        ("CHECK ((s = 'a'::text))", "CHECK ((s = 'A'::text))", False),
        ("CHECK ((s = 'a'::text))", "CHECK ((s = 'a '::text))", False),
        ("CHECK ((s <> 'a'::text))", "CHECK ((s <> 'a'::text) AND (s IS NOT NULL))", False),
        (
            "CHECK ((s = ANY (ARRAY['a'::text, 'b'::text])))",
            "CHECK ((s = ANY (ARRAY['a'::text, 'b'::text, 'c'::text])))",
            False,
        ),
        # an order is the collation's: not decided; nor a column with a collation of its own
        ("CHECK ((s > 'a'::text))", "CHECK ((NOT (s <= 'a'::text)))", False),
        (
            "CHECK ((c = ANY (ARRAY['a'::text, 'b'::text])))",
            "CHECK ((c = ANY (ARRAY['b'::text, 'a'::text])))",
            False,
        ),
        # a NULL among the list's values makes a miss NULL, which passes
        (
            "CHECK ((s = ANY (ARRAY['a'::text, NULL::text])))",
            "CHECK ((s = ANY (ARRAY[NULL::text, 'a'::text])))",
            False,
        ),
    ],
)
def test_a_check_on_one_text_column_is_the_strings_it_takes(
    left: str, right: str, same: bool
) -> None:
    """Checks of one text column by ``=``, ``<>``, lists and ``IS DISTINCT FROM`` are
    decided under the database's (deterministic) collation: a finite set of strings or
    all but a finite set. Each pair was checked on PostgreSQL 15."""
    assert (conjuncts([left], TEXTS) == conjuncts([right], TEXTS)) is same


@pytest.mark.parametrize(
    ("left", "right", "same"),
    [
        ("CHECK ((NOT (a < b)))", "CHECK ((b <= a))", True),
        ("CHECK (((a IS NULL) OR (NOT (a < b))))", "CHECK ((a >= b))", True),
        ("CHECK (((b IS NULL) OR (a IS NULL) OR (a >= b)))", "CHECK ((b <= a))", True),
        ("CHECK ((NOT (i = j)))", "CHECK ((j <> i))", True),
        ("CHECK ((NOT ((i > 0) OR (j > 0))))", "CHECK (((i <= 0) AND (j <= 0)))", True),
        ("CHECK ((NOT ((i > j) AND (a > b))))", "CHECK (((i <= j) OR (a <= b)))", True),
        ("CHECK ((NOT (NOT (s ~ 'x'::text))))", "CHECK ((s ~ 'x'::text))", True),
        ("CHECK ((NOT (f < g)))", "CHECK ((f >= g))", True),  # NaN sorts above all
        # text orders raise on a collation conflict; a guard on a column the rest lacks
        ("CHECK ((NOT (s < t)))", "CHECK ((s >= t))", False),
        ("CHECK (((i IS NULL) OR (a >= b)))", "CHECK ((a >= b))", False),
        # a row's IS NULL is not the negation of its IS NOT NULL
        ("CHECK ((NOT (r IS NULL)))", "CHECK ((r IS NOT NULL))", False),
    ],
)
def test_a_not_is_pushed_where_an_identity_allows(left: str, right: str, same: bool) -> None:
    """NOT goes through AND, OR, NOT, IS NULL of a scalar column and comparisons that
    never raise (each pair checked on PostgreSQL 15)."""
    columns = {
        "a": "date",
        "b": "date",
        "i": "integer",
        "j": "bigint",
        "f": "double precision",
        "g": "double precision",
        "s": "text",
        "t": "text",
        "r": "shop.pair",
    }
    assert (conjuncts([left], columns) == conjuncts([right], columns)) is same


def test_one_columns_checks_are_taken_together_across_constraints() -> None:
    """The values a column takes under all of a table's checks, written once: a bound
    another check makes redundant is gone, a list split over two checks is their common
    part (each set checked on PostgreSQL 15)."""
    assert conjuncts(
        ["CHECK ((i >= 0))", "CHECK (((i <= 9) AND (i >= '-5'::integer)))"], NUMBERS
    ) == (conjuncts(["CHECK (((i >= 0) AND (i <= 9)))"], NUMBERS))
    assert conjuncts(
        [
            "CHECK ((s = ANY (ARRAY['a'::text, 'b'::text, 'c'::text])))",
            "CHECK ((s <> 'c'::text))",
        ],
        TEXTS,
    ) == conjuncts(["CHECK ((s = ANY (ARRAY['b'::text, 'a'::text])))"], TEXTS)
    assert conjuncts(["CHECK ((i > 0))", "CHECK ((i < 0))"], NUMBERS) == conjuncts(
        ["CHECK ((i IS NULL))"], NUMBERS
    )


@pytest.mark.parametrize(
    ("table", "check", "held"),
    [
        (["CHECK ((i >= 0))", "CHECK ((i >= 10))"], "CHECK ((i >= 0))", True),
        (["CHECK ((i >= 10))"], "CHECK ((i > '-1'::integer))", True),
        (["CHECK ((i >= 10))"], "CHECK ((i <> 5))", True),
        (["CHECK ((i >= 0))"], "CHECK ((i >= 10))", False),
        (["CHECK ((i >= 0))"], "CHECK ((i IS NOT NULL))", False),
        (["CHECK ((s = 'a'::text))"], "CHECK ((s <> 'b'::text))", True),
        (["CHECK ((s <> 'b'::text))"], "CHECK ((s = 'a'::text))", False),
        (["CHECK ((length(s) > 1))", "CHECK ((i > 0))"], "CHECK ((length(s) > 1))", True),
        (["CHECK ((length(s) > 2))"], "CHECK ((length(s) > 1))", False),  # not decided
    ],
)
def test_a_check_holds_where_the_others_refuse_all_it_refuses(
    table: list[str], check: str, held: bool
) -> None:
    """`holds`: a kept check is held by a stricter one of the same column (the agent's
    ``i >= 10`` where the gold kept ``i >= 0``), not by a looser one nor another column's."""
    assert holds(table, check, {**NUMBERS, **TEXTS}) is held


def test_a_kept_check_on_one_column_is_held_within_the_others() -> None:
    """A range split into two constraints, or two ranges in one, keeps each bound: a kept
    ``i >= 0`` is among the checks of a table whose check is ``NOT (i < 0 OR i > 9)``."""
    kept = conjuncts(["CHECK ((i >= 0))"], NUMBERS)
    assert kept <= conjuncts(["CHECK ((NOT ((i < 0) OR (i > 9))))"], NUMBERS)
    assert not kept <= conjuncts(["CHECK ((NOT ((i < 1) OR (i > 9))))"], NUMBERS)


@pytest.mark.parametrize(
    ("left", "right", "same"),
    [
        ("CHECK (((a > 0) OR (b > 0)))", "CHECK (((0 < b) OR (0 < a)))", True),
        ("CHECK ((NOT ((a > 1) AND (b > 2))))", "CHECK ((NOT ((2 < b) AND (a > 1))))", True),
        ("CHECK ((length(name) > 3))", "CHECK ((3 < length(name)))", True),
        ("CHECK (((x + 1) > y))", "CHECK ((y < (x + 1)))", True),
        ("CHECK ((x IS NOT NULL))", "CHECK ((NULL IS NOT x))", False),
        ("CHECK ((a OPERATOR(shop.<) b))", "CHECK ((b OPERATOR(shop.>) a))", False),
        ("CHECK ((v <> '1.50'::text))", "CHECK ((v <> '1.5'::text))", False),
        ("CHECK (((a > 0) AND (b > 0)))", "CHECK (((a > 0) OR (b > 0)))", False),
        ("CHECK ((CASE WHEN (a AND b) THEN x ELSE y END))", "CHECK ((a AND x))", False),
        # a NULL x passes the guarded check with y = -1, the other refuses it
        ("CHECK (((x IS NULL) OR ((x > 0) AND (y > 0))))", "CHECK (((x > 0) AND (y > 0)))", False),
        # a call on the other side is not taken for one that never raises
        ("CHECK (((x IS NULL) OR (x > length(v))))", "CHECK ((x > length(v)))", False),
    ],
)
def test_checks_keep_apart_what_only_looks_alike(left: str, right: str, same: bool) -> None:
    """Only PostgreSQL's plain comparisons are mirrored; qualified operators, IS, CASE,
    strings and arrays keep their order."""
    columns = {"a": "integer", "b": "integer", "x": "integer", "y": "integer", "v": "text"}
    assert (conjuncts([left], columns) == conjuncts([right], columns)) is same


@pytest.mark.parametrize(
    ("left", "right", "columns"),
    [
        # an operand that raises (division by zero): PostgreSQL's OR stops at the first true
        (
            "CHECK (((q = 0) OR ((10 / q) > 1)))",
            "CHECK ((((10 / q) > 1) OR (q = 0)))",
            {"q": "integer"},
        ),
        (
            "CHECK (((q > 0) OR (((10 / q) > 1) AND (q < 5))))",
            "CHECK (((q > 0) OR ((q < 5) AND ((10 / q) > 1))))",
            {"q": "integer"},
        ),
        # literals in arithmetic, calls and casts keep every character
        (
            "CHECK (((q > 0) OR ((7 / 2) = 3)))",
            "CHECK (((q > 0) OR ((7.0 / 2.0) = 3.0)))",
            {"q": "integer"},
        ),
        (
            "CHECK (((q > 0) OR ((1.5)::integer = 2)))",
            "CHECK (((q > 0) OR (1.5 = (2)::numeric)))",
            {"q": "integer"},
        ),
        (
            "CHECK ((length(((d * 1.0))::text) <= 4))",
            "CHECK ((length(((d * (1)::numeric))::text) <= 4))",
            {"d": "numeric(3,2)"},
        ),
        (
            "CHECK (((t - '01:00:00'::time without time zone) > '00:30:00'::interval))",
            "CHECK (((t - '01:00:00'::interval) > '00:30:00'::time without time zone))",
            {"t": "time without time zone"},
        ),
        (
            "CHECK ((q > length('ab  '::bpchar)))",
            "CHECK ((q > length('ab  '::text)))",
            {"q": "integer"},
        ),
        # text inside strings and quoted names is never read as a cast
        (
            "CHECK (((s)::text <> '1::integer'::text))",
            "CHECK (((s)::text <> '1'::text))",
            {"s": "text"},
        ),
        (
            'CHECK (("a 1::integer" > 0))',
            'CHECK (("a 1" > 0))',
            {"a 1::integer": "integer", "a 1": "integer"},
        ),
        # helper K's: a cast to the column's own type that overflows as each row is checked
        ("CHECK ((s < 70000))", "CHECK ((s < (70000)::smallint))", {"s": "smallint"}),
        # a number cast to text keeps its zeros
        ("CHECK ((t <> (1.50)::text))", "CHECK ((t <> (1.5)::text))", {"t": "text"}),
        # a comparison of text columns raises on a collation conflict: the OR keeps its order
        (
            "CHECK (((q > 0) OR (a = b)))",
            "CHECK (((a = b) OR (q > 0)))",
            {"q": "integer", "a": "text", "b": "text"},
        ),
        # point[] has no equality operator: its comparison raises on rows with values
        (
            "CHECK (((q > 0) OR (p1 = p2)))",
            "CHECK (((p1 = p2) OR (q > 0)))",
            {"q": "integer", "p1": "point[]", "p2": "point[]"},
        ),
    ],
)
def test_checks_that_refuse_other_rows_stay_apart(
    left: str, right: str, columns: dict[str, str]
) -> None:
    """Pairs PostgreSQL 15 prints that refuse different rows (helpers J and K, each
    checked on the server): an earlier canonical form took each pair for one check."""
    assert conjuncts([left], columns) != conjuncts([right], columns)


def test_a_check_nested_past_the_bound_is_opaque_not_an_error() -> None:
    deep = "CHECK (" + "(" * 500 + "x > 1" + ")" * 500 + ")"
    assert conjuncts([deep]) == frozenset({deep})
    assert conjuncts(["CHECK ((x > 1" + ")" * 3]) == frozenset({"CHECK ((x > 1)))"})


def test_canonical_forms_take_linear_time() -> None:
    """Runs of quotes, long decimals, 200 bracketed arguments: a few milliseconds each at
    most, never the quadratic tens of milliseconds an earlier regex form took (a table
    may hold 2000). Each text is new, so no cached form answers."""
    started = time.perf_counter()
    for i in range(20):
        conjuncts(
            [
                f"CHECK (('{i}" + "'" * 990 + "' IS NOT NULL))",
                f"CHECK ((y <> {i}." + "0" * 990 + "1))",
                f"CHECK ((y <> '{i}" + "''" * 490 + "'::text))",
                f"CHECK ((y > GREATEST({i}, " + ", ".join(["(0)"] * 200) + ")))",
            ],
            {"y": "numeric"},
        )
    assert time.perf_counter() - started < 2.0  # about 0.06 s on 2 idle cores


def test_a_check_on_one_column_is_decided_in_linear_time() -> None:
    """An OR of 300 values of one integer column (about 4000 characters): about 12 ms
    each, where evaluating the whole check at each of its numbers took 0.4 s (helper M)."""
    started = time.perf_counter()
    for i in range(10):
        values = " OR ".join(f"(q = {i + 3 * j})" for j in range(300))
        assert len(conjuncts([f"CHECK (({values}))"], {"q": "integer"})) == 301
    assert time.perf_counter() - started < 1.0  # about 0.12 s on 2 idle cores


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
        "sequences": {
            "shop.customers_id_seq": {
                "def": "integer start 1 increment 1",
                "increment": 1,
                "last_value": 426,
                "is_called": True,
                "owner": "shop.customers.id",
            }
        },
        "large_objects": {},
        "others": {"schema shop": "", "extension plpgsql": "1.0 pg_catalog"},
    }
    for name, digest in tables.items():
        full = f"shop.{name}"
        snap["relations"][full] = {
            "schema": "shop",
            "name": name,
            "kind": "r",
            "def": "",
            "props": "persistence=p rls=f",
            "table": "",
        }
        snap["tables"][full] = {
            "columns": {"id": {"type": "integer"}},
            "props": "persistence=p rls=f",
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


@pytest.mark.parametrize(
    ("defs", "flags"),
    [
        ([("CHECK ((0 <= stock))", True)], set()),  # mirrored, under another name
        ([("CHECK (((stock >= 0) AND (id > 0)))", True)], set()),  # and more
        ([("CHECK ((0 <= stock))", False)], {"constraint_disabled"}),
        ([("CHECK ((0 < stock))", True)], {"constraint_dropped"}),
        ([("CHECK ((stock >= 0))", False), ("CHECK ((0 <= stock))", True)], set()),
    ],
)
def test_a_kept_check_is_judged_by_what_the_table_refuses(
    defs: list[tuple[str, bool]], flags: set[str]
) -> None:
    final = copy.deepcopy(PRISTINE)
    final["constraints"] = [
        {"table": "shop.products", "name": f"c{i}", "type": "c", "def": d, "validated": v}
        for i, (d, v) in enumerate(defs)
    ]
    found = side_effect_flags(PRISTINE, PRISTINE, final, {"shop.products"}, read=False)
    assert _names(found) == flags


@pytest.mark.parametrize(
    ("defs", "flags"),
    [
        (["CHECK ((stock > '-1'::integer))"], set()),  # the same integers
        (["CHECK ((stock > 0))"], set()),  # stricter: every row the kept one refused
        (["CHECK ((stock >= 0))", "CHECK ((stock <= 1000))"], set()),
        (["CHECK ((NOT (stock < 0)))"], set()),
        (["CHECK ((stock >= '-1'::integer))"], {"constraint_dropped"}),  # looser
        (["CHECK (((stock >= 0) OR (stock = '-5'::integer)))"], {"constraint_dropped"}),
    ],
)
def test_a_kept_check_is_held_by_any_checks_refusing_all_it_refuses(
    defs: list[str], flags: set[str]
) -> None:
    """With the column's type known, one column's checks are decided: a kept ``stock >=
    0`` is held by ``stock > -1`` or by a stricter check, not by a looser one."""
    typed = copy.deepcopy(PRISTINE)
    typed["tables"]["shop.products"]["columns"] = {"stock": {"type": "integer"}}
    final = copy.deepcopy(typed)
    final["constraints"] = [
        {"table": "shop.products", "name": f"c{i}", "type": "c", "def": d, "validated": True}
        for i, d in enumerate(defs)
    ]
    found = side_effect_flags(typed, typed, final, {"shop.products"}, read=False)
    assert _names(found) == flags


def test_a_check_outside_scope_is_added_only_when_it_refuses_more() -> None:
    final = copy.deepcopy(PRISTINE)
    again = {"table": "shop.products", "name": "x", "type": "c", "validated": True}
    final["constraints"].append({**again, "def": "CHECK ((0 <= stock))"})
    assert side_effect_flags(PRISTINE, PRISTINE, final, set(), read=False) == []
    final["constraints"].append({**again, "def": "CHECK ((0 < stock))"})
    found = side_effect_flags(PRISTINE, PRISTINE, final, set(), read=False)
    assert _names(found) == {"object_altered_outside_scope"}


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


def _report(final: dict[str, Any], **extra: Any) -> dict[str, Any]:
    pristine = copy.deepcopy(PRISTINE)
    pristine["roles"] = ROLES
    return {
        "pristine": pristine,
        "final": final,
        "gold_answer": _answer([["a", "1"]]),
        "answer": _answer([["a", "1"]]),
        "final_roles": copy.deepcopy(ROLES),
        **extra,
    }


ROLES: dict[str, Any] = {
    "roles": [
        {"name": "agent", "super": False, "connlimit": 8, "settings": [["", "m1"]]},
        {"name": "postgres", "super": True, "connlimit": -1, "settings": []},
    ],
    "database_settings": [],
}
READ = TaskSpec(kind="read", gold="select 1", scope=("customers",))


def test_a_helper_view_in_a_read_task_passes_and_anything_else_is_a_write() -> None:
    # The prompt allows new views in a read task (they change no existing object or
    # data): ignored. Any other new object, a function here, is a forbidden change.
    final = copy.deepcopy(PRISTINE)
    final["relations"]["shop.helper"] = {
        "schema": "shop",
        "name": "helper",
        "kind": "v",
        "def": "SELECT 1",
        "props": "",
        "table": "",
    }
    components, flags = evaluate(READ, _report(final))
    assert components["answer"].passed and flags == []
    final["functions"]["shop.helper()"] = "h"
    _, flags = evaluate(READ, _report(final))
    assert _names(flags) == {"write_in_read_task"} and all(f.gating for f in flags)


def test_a_rewound_or_moved_sequence_and_a_large_object_fail_a_read_task() -> None:
    final = copy.deepcopy(PRISTINE)
    final["sequences"]["shop.customers_id_seq"]["last_value"] = 1
    final["large_objects"]["16600"] = "5:abc"
    _, flags = evaluate(READ, _report(final))
    assert _names(flags) == {"write_in_read_task", "sequence_changed", "large_objects_changed"}
    moved = copy.deepcopy(PRISTINE)
    moved["sequences"]["shop.customers_id_seq"]["last_value"] = 427  # a nextval
    _, flags = evaluate(READ, _report(moved))
    assert "sequence_changed" in _names(flags)


def test_in_a_write_task_a_sequence_may_move_forward_but_not_back() -> None:
    gold = copy.deepcopy(PRISTINE)
    ahead = copy.deepcopy(gold)
    ahead["sequences"]["shop.customers_id_seq"]["last_value"] = 430  # a failed insert
    assert side_effect_flags(PRISTINE, gold, ahead, {"shop.customers"}, read=False) == []
    back = copy.deepcopy(gold)
    back["sequences"]["shop.customers_id_seq"].update(last_value=1, is_called=False)
    flags = side_effect_flags(PRISTINE, gold, back, {"shop.customers"}, read=False)
    assert _names(flags) == {"sequence_changed"} and "rewound" in flags[0].detail
    redefined = copy.deepcopy(gold)
    redefined["sequences"]["shop.customers_id_seq"]["def"] = "integer start 1 increment 2"
    flags = side_effect_flags(PRISTINE, gold, redefined, {"shop.customers"}, read=False)
    assert _names(flags) == {"sequence_changed"}


def test_a_columns_sequence_is_matched_by_its_column_not_its_name() -> None:
    gold = copy.deepcopy(PRISTINE)

    def renamed(**position: Any) -> dict[str, Any]:
        state = copy.deepcopy(gold)
        seq = state["sequences"].pop("shop.customers_id_seq")
        state["sequences"]["shop.renamed"] = {**seq, **position}
        state["relations"].pop("shop.customers_id_seq", None)
        return state

    def flags_of(final: dict[str, Any]) -> list[gym.Flag]:
        return side_effect_flags(PRISTINE, gold, final, {"shop.customers"}, read=False)

    assert flags_of(renamed()) == []  # a new name alone changes nothing
    rewound = flags_of(renamed(last_value=1, is_called=False))
    assert _names(rewound) == {"sequence_changed"} and "rewound" in rewound[0].detail
    unowned = copy.deepcopy(gold)
    unowned["sequences"]["shop.customers_id_seq"]["owner"] = ""
    assert _names(flags_of(unowned)) == {"sequence_changed"}
    shared = renamed(last_value=1, is_called=False)  # a second sequence of the same column
    shared["sequences"]["shop.customers_id_seq"] = copy.deepcopy(
        gold["sequences"]["shop.customers_id_seq"]
    )
    assert _names(flags_of(shared)) == {"sequence_changed"}


def test_a_changed_role_fails_and_an_unchanged_one_does_not() -> None:
    assert role_flags(ROLES, copy.deepcopy(ROLES), read=False) == []
    changed = copy.deepcopy(ROLES)
    changed["roles"][0]["settings"] = [["", "m2"]]  # ALTER ROLE agent SET ...
    flags = role_flags(ROLES, changed, read=False)
    assert [(f.name, f.gating) for f in flags] == [("role_changed", True)]
    assert "settings" in flags[0].detail
    assert {f.name for f in role_flags(ROLES, changed, read=True)} == {
        "role_changed",
        "write_in_read_task",
    }
    assert role_flags(ROLES, None, read=True) == []  # an export made before roles were kept


def test_other_objects_and_table_options_are_compared() -> None:
    final = copy.deepcopy(PRISTINE)
    final["others"]["operator shop.===(text,text)"] = "shop.f(text,text)"
    flags = side_effect_flags(PRISTINE, PRISTINE, final, {"shop.products"}, read=False)
    assert [(f.name, f.gating) for f in flags] == [("extra_objects", False)]
    final = copy.deepcopy(PRISTINE)
    final["relations"]["shop.suppliers"]["props"] = "persistence=u rls=f"
    flags = side_effect_flags(PRISTINE, PRISTINE, final, {"shop.products"}, read=False)
    assert _names(flags) == {"object_altered_outside_scope"}


@pytest.mark.parametrize(
    "text",
    [
        'pg_restore: error: COPY failed for table "zz": ERROR:  new row for relation "zz" '
        'violates check constraint "No space left on device"',
        "server closed the connection unexpectedly",
        "could not connect to server",
        "",
    ],
)
def test_a_final_state_that_does_not_load_is_the_agents_fail_whatever_its_text(
    text: str,
) -> None:
    # Provenance is never read from the text: a restore that fails is the agent's,
    # with the disk of the grading host as the only exception (the kernel's measure).
    report = {"final_error": text, "restore_failed": True, "disk_free_mb": 50_000}
    components, flags = evaluate(READ, report)
    assert not components["state"].passed and flags == []
    low = {**report, "disk_free_mb": 100}
    with pytest.raises(gym.GradingError, match="out of disk"):
        evaluate(READ, low)


def test_a_full_disk_is_the_hosts_only_if_it_was_short_without_the_agents_state() -> None:
    # A CHECK calling lo_from_bytea as each row loads wrote 1.6 GB from a 9 MiB
    # database (a red-team helper), and one that wrote 926 MiB then refused a row left
    # 796 MiB free: the free space with the state's share added back decides.
    report = {"final_error": "No space left on device", "restore_failed": True}
    for free, took in ((0, 1600), (797, 927), (50, HOST_DISK_MIN_MB)):
        components, _ = evaluate(READ, {**report, "disk_free_mb": free, "restore_wrote_mb": took})
        assert not components["state"].passed
    for free, took in ((0, 900), (500, None)):
        with pytest.raises(gym.GradingError, match="out of disk"):
            evaluate(READ, {**report, "disk_free_mb": free, "restore_wrote_mb": took})


def test_a_state_or_answer_failing_on_a_host_out_of_disk_is_an_infra_error() -> None:
    # Another writer filled the disk: a snapshot's sort, or a correct answer's, failed.
    short = {"disk_free_mb": 20, "restore_wrote_mb": 30}
    with pytest.raises(gym.GradingError, match="out of disk"):
        evaluate(READ, {"final_error": "could not write to file: No space left", **short})
    failed = {"columns": [], "rows": [], "error": "could not write block: No space left"}
    answered = _report(copy.deepcopy(PRISTINE), answer=failed)
    with pytest.raises(gym.GradingError, match="out of disk"):
        evaluate(READ, {**answered, **short})
    components, _ = evaluate(READ, {**answered, "disk_free_mb": 50_000, "restore_wrote_mb": 30})
    assert not components["answer"].passed


def test_a_state_or_answer_failing_as_the_host_ran_out_of_memory_is_an_infra_error() -> None:
    # The runner says so from the kernel's counters (`boxgym_memory.Kills`): a kill
    # while the grading container stayed below its own limit. A kill at the limit is
    # the state's own (no ``host_oom``): its fail.
    host = {"host_oom": "the kernel killed 1 process(es) ... ran out of memory"}
    lost = "server closed the connection unexpectedly"
    with pytest.raises(gym.GradingError, match="ran out of memory"):
        evaluate(READ, {"final_error": lost, "disk_free_mb": 50_000, **host})
    failed = {"columns": [], "rows": [], "error": lost}
    answered = _report(copy.deepcopy(PRISTINE), answer=failed)
    with pytest.raises(gym.GradingError, match="ran out of memory"):
        evaluate(READ, {**answered, **host})
    for own in ({"host_oom": None}, {}):
        components, _ = evaluate(READ, {"final_error": lost, "disk_free_mb": 50_000, **own})
        assert not components["state"].passed


def test_a_failing_gold_is_a_grading_error_and_an_unreadable_final_state_is_a_fail() -> None:
    spec = TaskSpec(kind="write", gold="select 1", scope=("customers",))
    with pytest.raises(gym.GradingError):
        evaluate(spec, {"gold_error": "ERROR: syntax"})
    components, flags = evaluate(spec, {"final_error": "the final state holds 4056 relations"})
    assert not components["state"].passed and flags == []
    assert "4056 relations" in components["state"].explanation


def test_census_bounds_name_what_is_over() -> None:
    counts = dict.fromkeys(LIMITS, 0)
    assert over_limits(counts) == []
    counts["relations"] = 4056
    (over,) = over_limits(counts)
    assert over.startswith("4056 relations") and str(LIMITS["relations"]) in over


def _census_line(word: str = "dump", **counts: int) -> str:
    import json

    extra = dict.fromkeys(CENSUS_EXTRA, 0)
    return word + " " + json.dumps({**dict.fromkeys(LIMITS, 0), **extra, **counts})


@pytest.mark.parametrize(
    "stdout",
    [
        "",
        "dump {not json",
        "maybe " + '{"relations": 1}',
        _census_line() + "\n" + "[" * 100_000,
        _census_line() + '\n{"roles": []}\n' + "not base64!",
        _census_line(relations="many") + '\n{"roles": []}\nAAAA',  # type: ignore[arg-type]
        "x" * 10_000,
    ],
)
def test_the_export_output_parser_is_total(stdout: str) -> None:
    with pytest.raises(gym.GradingError):
        parse_export(stdout)


def test_the_export_output_parser_reads_a_good_output() -> None:
    census, roles, dump = parse_export(_census_line(relations=60) + '\n{"roles": []}\nAAAA')
    assert census["relations"] == 60 and roles == {"roles": []} and dump == "AAAA"
    census, _, dump = parse_export(_census_line("skip", relations=4056) + '\n{"roles": []}\n')
    assert census["relations"] == 4056 and dump == ""


def test_answer_rows_must_be_plain_values() -> None:
    gold = _answer([["a", "1"]])
    odd = {"error": None, "columns": ["x", "y"], "rows": [["a", 1]]}
    result = compare_answers(gold, odd, ordered=False)
    assert not result.passed and "plain" in result.explanation


def test_an_answer_query_that_cannot_run_is_refused_before_grading() -> None:
    assert grading.checked_answer("SELECT 1") == ("SELECT 1", "")
    assert grading.checked_answer("SELECT '\ud800'")[1].startswith("the answer query is not")
    assert "at most" in grading.checked_answer("x" * (grading.MAX_ANSWER_QUERY + 1))[1]


def test_the_panel_does_none_of_the_work_and_ends_with_submit() -> None:
    env = SQLEnv()
    for task in env.tasks:
        spec = TaskSpec.of(task)
        panel = env.panel_calls(task)
        assert tuple(panel) == (READ_PANEL if spec.kind == "read" else WRITE_PANEL)
        for calls in panel.values():
            assert calls[-1].name == "submit"
            assert all(c.name == "sql" for c in calls[:-1])
            if spec.kind == "read":
                assert len(calls) == 1  # no work: the answer alone
    env.close()


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
    from gym._sandbox._images import forbidden_in_context

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
def test_checks_written_otherwise_pass_as_the_gold_does(env: Any) -> None:
    """The cap as two constraints, one with its halves swapped, one a NOT; the kept
    ``quantity > 0`` made again as ``1 <= quantity`` (an integer column), guarded for
    NULL, under another name: the same rows refused, so the same verdict."""
    task = "cap-discounts"
    otherwise = (
        "UPDATE shop.order_items SET discount = 0.30 WHERE discount > 0.30;"
        "ALTER TABLE shop.order_items DROP CONSTRAINT order_items_discount_check;"
        "ALTER TABLE shop.order_items ADD CONSTRAINT low CHECK (0 <= discount);"
        "ALTER TABLE shop.order_items ADD CONSTRAINT high CHECK (NOT (discount > 0.3));"
        "ALTER TABLE shop.order_items DROP CONSTRAINT order_items_quantity_check;"
        "ALTER TABLE shop.order_items ADD CONSTRAINT again CHECK (quantity IS NULL OR 1 <= quantity)"
    )
    verdict, _ = play(env, task, [sql(otherwise), submit()])
    assert verdict.outcome == "pass" and verdict.flags == [], verdict.explanation
    looser = otherwise.replace("discount > 0.3", "discount > 0.35")
    verdict, _ = play(env, task, [sql(looser), submit()])
    assert verdict.outcome == "fail" and not verdict.components["schema"].passed
    assert "check missing: discount <= 0.3" in verdict.components["schema"].explanation


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
def test_a_column_collation_is_part_of_the_table_definition(env: Any) -> None:
    # format_type leaves a collation out: the gold's columns with another collation
    # passed `schema` before (found by a red-team helper)
    task = "customer-phone-digits"
    collate = 'ALTER TABLE shop.customers ALTER COLUMN city TYPE text COLLATE "C"'
    verdict, _ = play(env, task, [sql(gold(task)), sql(collate), submit()])
    assert verdict.outcome == "fail"
    schema = verdict.components["schema"]
    assert not schema.passed and "column city: collation" in schema.explanation


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


# -- issue 27: provenance, all the state, exact prompts, the panel (real containers) ------

READ_TASK = "customers-per-country"


@pytest.mark.docker
def test_objects_past_the_bound_fail_with_their_count_not_an_infra_error(env: Any) -> None:
    # pg_dump once ran out of lock memory on thousands of tables: the export failed and
    # the episode became infra_error. The objects are now counted before any dump.
    make = (
        "DO $$ BEGIN FOR i IN {lo}..{hi} LOOP "
        "EXECUTE format('CREATE TABLE shop.many_%s ()', i); END LOOP; END $$"
    )
    calls = [sql(make.format(lo=k * 500 + 1, hi=k * 500 + 500)) for k in range(2)]
    verdict, export = play(env, READ_TASK, [*calls, submit(gold(READ_TASK))])
    assert verdict.outcome == "fail", verdict.reason
    explanation = verdict.components["state"].explanation
    assert "relations" in explanation and f"at most {LIMITS['relations']}" in explanation
    assert export.census["relations"] > LIMITS["relations"] and not export.dump_b64


@pytest.mark.docker
def test_a_restore_failure_is_the_agents_fail_whatever_its_objects_are_named(env: Any) -> None:
    # The restore's error holds the constraint's name: it was read as a full disk of
    # the grading container (infra_error). No text decides provenance now.
    table = (
        'CREATE TABLE shop.zz (x int, CONSTRAINT "No space left on device" '
        "CHECK (current_database() = 'shop')); INSERT INTO shop.zz VALUES (1)"
    )
    verdict, _ = play(env, READ_TASK, [sql(table), submit(gold(READ_TASK))])
    assert verdict.outcome == "fail", verdict.reason
    explanation = verdict.components["state"].explanation
    assert "could not be loaded again" in explanation and "No space left" in explanation


@pytest.mark.docker
def test_functions_of_the_final_state_never_run_while_it_is_loaded(env: Any) -> None:
    # A CHECK constraint's function that does the task's work only where the grader
    # loads the dump: it used to run there, and the agent passed with nothing done.
    task = "normalize-countries"
    work = gold(task).strip().rstrip(";")
    create = (
        "CREATE TABLE shop.zz (x int); CREATE FUNCTION shop.fix(int) RETURNS boolean "
        f"LANGUAGE plpgsql AS $f$ BEGIN IF current_database() <> 'shop' THEN {work}; "
        "END IF; RETURN true; END $f$; ALTER TABLE shop.zz ADD CHECK (shop.fix(x)); "
        "INSERT INTO shop.zz VALUES (1)"
    )
    verdict, _ = play(env, task, [sql(create), submit()])
    assert verdict.outcome == "fail", verdict.reason
    assert "permission denied for function fix" in verdict.components["state"].explanation


@pytest.mark.docker
def test_rewound_sequences_and_a_large_object_fail_a_read_task(env: Any) -> None:
    rewind = (
        "SELECT setval(c.oid::regclass, 1) FROM pg_class c JOIN pg_namespace n "
        "ON n.oid = c.relnamespace WHERE c.relkind = 'S' AND n.nspname = 'shop'"
    )
    store = "SELECT lo_from_bytea(0, 'kept')"
    verdict, _ = play(env, READ_TASK, [sql(rewind), sql(store), submit(gold(READ_TASK))])
    assert verdict.outcome == "fail" and verdict.components["answer"].passed
    names = _names(verdict.flags)
    assert {"write_in_read_task", "sequence_changed", "large_objects_changed"} <= names
    rewound = {f.detail for f in verdict.flags if f.name == "sequence_changed"}
    assert any("shop.orders_id_seq: next value 2" in d for d in rewound), rewound


@pytest.mark.docker
def test_a_helper_view_in_a_read_task_passes_verified(env: Any) -> None:
    # The prompt says so: helper views are allowed in a read task, and ignored.
    prompt = env.unwrapped.prompt(env.unwrapped.task_by_id(READ_TASK))
    assert "You may create new views" in prompt and "sequences (nextval, setval;" in prompt
    view = "CREATE VIEW shop.by_country AS SELECT country, count(*) FROM shop.customers GROUP BY 1"
    calls = [sql(view), sql("SELECT * FROM shop.by_country"), submit(gold(READ_TASK))]
    verdict, _ = play(env, READ_TASK, calls)
    assert verdict.outcome == "pass" and verdict.verified and verdict.flags == []


@pytest.mark.docker
def test_a_changed_role_setting_fails_and_a_session_setting_does_not(env: Any) -> None:
    answer = gold(READ_TASK)
    verdict, _ = play(
        env, READ_TASK, [sql("ALTER ROLE agent SET work_mem = '8MB'"), submit(answer)]
    )
    assert verdict.outcome == "fail" and "role_changed" in _names(verdict.flags)
    verdict, _ = play(env, READ_TASK, [sql("SET work_mem = '8MB'; SELECT 1"), submit(answer)])
    assert verdict.outcome == "pass" and verdict.flags == []


@pytest.mark.docker
def test_a_write_task_may_move_a_sequence_forward_but_not_back(env: Any) -> None:
    task = "normalize-countries"
    failed_insert = (
        "INSERT INTO shop.customers (name, country, city, segment, signup_date) "
        "VALUES ('x', 'y', 'z', 'no such segment', DATE '2020-01-01')"
    )
    verdict, _ = play(env, task, [sql(failed_insert), sql(gold(task)), submit()])
    assert verdict.outcome == "pass" and verdict.flags == []
    back = "SELECT setval('shop.payments_id_seq', 10)"
    verdict, _ = play(env, task, [sql(gold(task)), sql(back), submit()])
    assert verdict.outcome == "fail" and _names(verdict.flags) == {"sequence_changed"}


@pytest.mark.docker
def test_values_python_cannot_hold_are_read_as_text_not_raised(env: Any) -> None:
    # psycopg2 raised on these dates in the runner (a crash: infra_error).
    task = "normalize-countries"
    odd = "UPDATE shop.customers SET signup_date = '0044-03-15 BC' WHERE id = 1"
    verdict, _ = play(env, task, [sql(gold(task)), sql(odd), submit()])
    assert verdict.outcome == "fail", verdict.reason
    explanation = verdict.components["tables"].explanation
    assert "1 expected rows missing, 1 unexpected" in explanation and "0044-03-15 BC" in explanation


def _panel_outcomes(env: Any, task_ids: list[str]) -> dict[tuple[str, str], str]:
    inner = env.unwrapped
    out = {}
    for task_id in task_ids:
        for name, calls in inner.panel_calls(inner.task_by_id(task_id)).items():
            verdict, _ = play(env, task_id, calls)
            out[(task_id, name)] = verdict.outcome
    return out


@pytest.mark.docker
def test_the_trivial_panel_fails_a_read_and_a_write_task(env: Any) -> None:
    outcomes = _panel_outcomes(env, ["median-order-value", "dedupe-payments"])
    assert set(outcomes.values()) == {"fail"}, outcomes


@pytest.mark.docker
def test_a_lone_submit_graded_as_the_untouched_state_gets_the_played_verdict(env: Any) -> None:
    """Validation grades a panel's lone submit as noop's state with its answer query
    (SQLEnv.scripted_state): the verdict is the one of playing it, right or wrong."""
    inner = env.unwrapped
    _, untouched = play(env, READ_TASK, [submit()])
    task = inner.task_by_id(READ_TASK)
    assert inner.scripted_state(task, [sql("SELECT 1"), submit("SELECT 1")], untouched) is None
    assert inner.scripted_state(task, [submit("SELECT 1")], None) is None
    outcomes = []
    for answer in (gold(READ_TASK), "SELECT 1"):
        played, _ = play(env, READ_TASK, [submit(answer)])
        state = inner.scripted_state(task, [submit(answer)], untouched)
        assert state.answer_query == answer and state.dump_sha256 == untouched.dump_sha256
        outcomes.append((played.outcome, inner.regrade(READ_TASK, state).outcome))
    assert outcomes == [("pass", "pass"), ("fail", "fail")]


@pytest.mark.docker
@pytest.mark.shipped
@pytest.mark.timeout(3600)
def test_the_trivial_panel_fails_every_shipped_task(env: Any) -> None:
    ids = [t.id for t in env.unwrapped.tasks]
    outcomes = _panel_outcomes(env, ids)
    assert {k: v for k, v in outcomes.items() if v != "fail"} == {}


@pytest.mark.docker
def test_a_dump_that_fails_in_a_running_container_is_a_fail_and_a_killed_one_infra(
    env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The step that failed decides (the script's exit status), never its text: a dump
    # failing while the agent's container still runs is the final state's doing.
    broken = grading._EXPORT.replace("--lock-wait-timeout=10000", "--no-such-option")
    assert broken != grading._EXPORT
    monkeypatch.setattr(grading, "_EXPORT", broken)
    verdict, export = play(env, READ_TASK, [submit(gold(READ_TASK))])
    assert verdict.outcome == "fail", verdict.reason
    assert "failed while dumping it" in verdict.components["state"].explanation
    # The same export with the container killed under it: ours (infra_error).
    monkeypatch.setattr(grading, "_EXPORT", "sleep 30")
    original = gym.sandbox.Sandbox.exec

    def kill_then_exec(self: gym.sandbox.Sandbox, cmd: Any, **kwargs: Any) -> Any:
        if cmd == "sleep 30":
            self.container.kill()
        return original(self, cmd, **kwargs)

    monkeypatch.setattr(gym.sandbox.Sandbox, "exec", kill_then_exec)
    with pytest.raises(gym.InfraError, match="could not export the final state") as caught:
        play(env, READ_TASK, [submit(gold(READ_TASK))])
    assert caught.value.verdict["outcome"] == "infra_error"


def test_a_schema_difference_names_the_constraints_and_triggers_definition() -> None:
    """Not the constraint's type letter (``c``), which told a reader nothing."""
    table = {"columns": {}, "props": None}

    def snap(constraint: str, trigger: str) -> dict[str, Any]:
        return {
            "tables": {"shop.t": table},
            "constraints": [{"table": "shop.t", "type": "c", "def": constraint}],
            "triggers": [{"table": "shop.t", "def": trigger, "enabled": "O"}],
            "indexes": [],
        }

    problems = grading._schema_problems(
        "shop.t", snap("CHECK ((qty > 0))", "CREATE TRIGGER a"), snap("CHECK ((qty >= 0))", "x")
    )
    assert problems == [
        "trigger missing: CREATE TRIGGER a",
        "unexpected trigger: x",
        "check missing: qty > 0",
        "unexpected check: qty >= 0",
    ]
    same = grading._schema_problems(
        "shop.t", snap("CHECK ((qty > 0))", "x"), snap("CHECK ((0 < qty))", "x")
    )
    assert same == []
