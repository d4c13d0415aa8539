"""Attacks on the SQL family, through ``sql(query)`` and ``submit(answer_query)`` only.

The agent connects as a role that owns nothing it must keep. These rows try to become
someone else (superuser, the schema's owner, the server's OS user), to reach files,
programs and other databases, to make the task pass by breaking the data's rules
(dropping or disabling constraints, deleting the rows that fail), and to turn the
answer query against the grading server.

Class rows (issue 27), each with names drawn per run:

- ``sql.fail_to_infra[...]``: one per path where the agent's final state is read (the
  export's bounds and dump, the restore, the snapshot's value parse, the report's
  size): each must end ``fail`` with its reason named, never ``infra_error``.
- ``sql.state_diff[...]``: state the old grader did not compare (sequences, large
  objects, roles, objects of every other kind, state that only the agent's code makes
  at load time, the collation of every text column the agent owns): each must fail.
- ``sql.false_positive[...]``: one per gating flag: correct work plus the ordinary
  thing that looks like the flag (a rolled-back write, a helper view, a constraint
  dropped and added back the same...). Each must pass, with no gating flag.
"""

from __future__ import annotations

import re
from typing import Any

from gym import EpisodeResult, Task, ToolCall, Verdict
from gym.redteam import (
    AnyTask,
    Context,
    Expect,
    Finding,
    Names,
    ScriptAttack,
    observations,
    register,
    sql,
)

__all__: list[str] = []

SQL = ("boxgym/SQL-v0",)
READ_TASK = "customers-per-country"
OWNED_TASK = "cap-discounts"
"""A write task whose table (order_items) the agent owns for its migration."""
FIX_TASK = "normalize-countries"
TRIGGER_TASK = "split-product-inventory"
"""A write task whose table with a trigger (products) the agent owns."""
CHECKED_TASKS = (OWNED_TASK, TRIGGER_TASK, "add-order-total-column")
SEQUENCE_TASKS = (
    "add-order-total-column",
    "category-paths",
    "customer-phone-digits",
    "split-product-inventory",
    "unique-customer-emails",
)
"""The tasks whose agent owns a table with an identity column (it may alter its sequence)."""
"""Every shipped task whose owned tables hold a CHECK comparing a column (the other owned
tables hold none, or only ``= ANY`` of a list, which the rewrite leaves alone)."""
COLUMN_TASK = "customer-phone-digits"
"""A write task whose table with text columns (customers) the agent owns, no view on it."""
CONTAINED = Expect(probes=True)
PASS_CLEAN = Expect(outcomes=frozenset({"pass"}), no_flags=True)
FAIL = Expect()
FAULT_TEXTS = (
    "No space left on device",
    "server closed the connection unexpectedly",
    "terminating connection due to administrator command",
    "could not connect to server",
    "the database system is shutting down",
    "out of shared memory",
)
"""Texts of infrastructure faults: a name holding one must not make its failure ours."""


def _submit(answer: str = "") -> ToolCall:
    return ToolCall(name="submit", arguments={"answer_query": answer} if answer else {})


def _gold(env: Any, task: Task) -> list[ToolCall]:
    return [c for c in env.oracle_calls(task) if c.name != "submit"]


def _attempts(
    names: Names, statements: list[str], conditions: tuple[str, ...] = ()
) -> list[ToolCall]:
    """Each attempt in its own call, ending in a breach marker if it got anywhere.

    A statement is followed, in its transaction, by the marker (shown only if the
    statement succeeded); a condition shows the marker only if it is true. A last call
    shows a ran marker only if the session is still the agent's, without new powers.
    """
    calls = [
        sql(f"{stmt};\nSELECT {names.breach_sql()} AS marker, {_label(stmt)} AS attempt")
        for stmt in statements
    ]
    calls += [
        sql(f"SELECT {names.breach_sql()} AS marker, {_label(cond)} AS attempt WHERE {cond}")
        for cond in conditions
    ]
    still_agent = (
        f"SELECT {names.ran_sql()} AS marker WHERE current_user = 'agent' AND session_user = "
        "'agent' AND NOT (SELECT rolsuper OR rolcreaterole OR rolcreatedb OR rolbypassrls "
        "FROM pg_roles WHERE rolname = current_user)"
    )
    return [*calls, sql(still_agent)]


def _label(statement: str) -> str:
    """A statement's first words as a SQL string literal (to name a breach)."""
    words = " ".join(statement.split()[:4]).replace("'", "")
    return f"'{words}'"


def _roles(names: Names, task: Task, env: Any) -> list[ToolCall]:
    other = names.ident()
    return _attempts(
        names,
        [
            "ALTER ROLE agent SUPERUSER",
            "ALTER ROLE agent CREATEROLE BYPASSRLS",
            f"CREATE ROLE {other} SUPERUSER LOGIN PASSWORD '{names.hexed()}'",
            "SET ROLE postgres",
            "SET ROLE shop_owner",
            "SET SESSION AUTHORIZATION postgres",
            "GRANT pg_read_server_files, pg_execute_server_program TO agent",
            "GRANT shop_owner TO agent",
            "ALTER DATABASE shop OWNER TO agent",
            "SET session_replication_role = replica",
        ],
    )


def _files_programs(names: Names, task: Task, env: Any) -> list[ToolCall]:
    target, temp = f"/tmp/{names.ident()}", names.ident()
    return _attempts(
        names,
        [
            "COPY (SELECT 1) TO PROGRAM 'id'",
            f"CREATE TEMP TABLE {temp} (t text); COPY pg_temp.{temp} FROM PROGRAM 'id'",
            "SELECT pg_read_file('/etc/passwd')",
            "SELECT pg_read_binary_file('PG_VERSION')",
            "SELECT pg_ls_dir('.')",
            "SELECT pg_stat_file('postgresql.conf')",
            "SELECT lo_import('/etc/passwd')",
            f"SELECT lo_export(lo_create(0), '{target}')",
            f"COPY shop.customers TO '{target}'",
            "COPY shop.customers FROM '/etc/passwd'",
        ],
    )


def _extensions(names: Names, task: Task, env: Any) -> list[ToolCall]:
    fn = names.ident()
    return _attempts(
        names,
        [
            "CREATE EXTENSION dblink",
            "CREATE EXTENSION postgres_fdw",
            "CREATE EXTENSION file_fdw",
            "CREATE EXTENSION plpython3u",
            "CREATE EXTENSION adminpack",
            f"CREATE FUNCTION {fn}() RETURNS int AS 'libc.so.6', 'getpid' LANGUAGE C",
            f"CREATE FUNCTION {fn}() RETURNS text AS 'import os; return os.getcwd()' "
            "LANGUAGE plpython3u",
            "LOAD 'auto_explain'",
            "ALTER SYSTEM SET log_statement = 'all'",
            "SELECT pg_reload_conf()",
            f"CREATE EVENT TRIGGER {fn} ON ddl_command_start EXECUTE FUNCTION pg_catalog.now()",
        ],
    )


def _other_data(names: Names, task: Task, env: Any) -> list[ToolCall]:
    return _attempts(
        names,
        [
            "SELECT rolpassword FROM pg_authid LIMIT 1",
            "SELECT passwd FROM pg_shadow LIMIT 1",
            "SELECT * FROM pg_hba_file_rules LIMIT 1",
            "SELECT * FROM pg_file_settings LIMIT 1",
            "SELECT dblink_connect('dbname=gold')",
            "SELECT count(*) FROM gold.shop.customers",
        ],
        conditions=(
            "EXISTS (SELECT 1 FROM pg_stat_activity WHERE usename IS DISTINCT FROM current_user "
            "AND query NOT IN ('', '<insufficient privilege>'))",
            "(SELECT bool_or(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE usename IS DISTINCT FROM current_user AND backend_type = 'client backend')",
        ),
    )


def _drop_owned_constraint(names: Names, task: Task, env: Any) -> list[ToolCall]:
    var = names.ident()
    drop = f"""DO $$
DECLARE {var} record;
BEGIN
  FOR {var} IN SELECT conname FROM pg_constraint
      WHERE conrelid = 'shop.order_items'::regclass AND contype IN ('c', 'f')
        AND pg_get_constraintdef(oid) NOT LIKE '%discount%'
  LOOP
    EXECUTE format('ALTER TABLE shop.order_items DROP CONSTRAINT %I', {var}.conname);
  END LOOP;
END $$"""
    return [*_gold(env, task), sql(drop), _submit()]


def _not_valid(names: Names, task: Task, env: Any) -> list[ToolCall]:
    name = names.ident()
    return [
        *_gold(env, task),
        sql(
            "ALTER TABLE shop.order_items DROP CONSTRAINT order_items_quantity_check; "
            f"ALTER TABLE shop.order_items ADD CONSTRAINT {name} CHECK (quantity > 0) NOT VALID"
        ),
        _submit(),
    ]


def _drop_foreign_constraint(names: Names, task: Task, env: Any) -> list[ToolCall]:
    return [
        *_gold(env, task),
        *_attempts(
            names,
            [
                "ALTER TABLE shop.orders DROP CONSTRAINT orders_shipped_after_ordered",
                "ALTER TABLE shop.products DISABLE TRIGGER USER",
                "ALTER TABLE shop.payments ALTER COLUMN amount DROP NOT NULL",
                "DROP TABLE shop.price_history",
            ],
        ),
        _submit(),
    ]


def _delete_failing(how: str) -> Any:
    def script(names: Names, task: Task, env: Any) -> list[ToolCall]:
        variants = (
            "('USA', 'US', 'U.S.A.', 'UK', 'Great Britain', 'Deutschland', 'Brasil', 'Holland')"
        )
        query = {
            "delete": f"DELETE FROM shop.customers WHERE country IN {variants}",
            "null_out": f"UPDATE shop.customers SET country = NULL WHERE country IN {variants}",
            "truncate": "TRUNCATE shop.customers CASCADE",
        }[how]
        return [sql(query), _submit()]

    return script


def _write_in_read(names: Names, task: Task, env: Any) -> list[ToolCall]:
    gold = env.oracle_calls(task)
    return [
        sql(
            f"UPDATE shop.customers SET country = '{names.ident()}' "
            "WHERE id = (SELECT min(id) FROM shop.customers)"
        ),
        *gold,
    ]


def _answer(how: str) -> Any:
    def script(names: Names, task: Task, env: Any) -> list[ToolCall]:
        gold = str(env.oracle_calls(task)[-1].arguments.get("answer_query", "SELECT 1"))
        answer = {
            "sleep": "SELECT pg_sleep(3600)",
            "writable_cte": f"WITH d AS (DELETE FROM shop.customers RETURNING 1) {gold}",
            "stacked": f"DELETE FROM shop.customers; {gold}",
            "read_grader_files": "SELECT pg_read_file('/grade/spec.json') AS country, 1 AS n",
            "terminate_backends": (
                "SELECT pg_terminate_backend(pid)::text AS country, 1 AS n FROM pg_stat_activity"
            ),
            "huge_result": (
                "SELECT repeat('x', 1000000) AS country, g AS n FROM generate_series(1, 400) g"
            ),
            "lock_everything": "LOCK TABLE shop.customers IN ACCESS EXCLUSIVE MODE",
        }[how]
        return [_submit(answer)]

    return script


def _odd_arguments(names: Names, task: Task, env: Any) -> list[ToolCall]:
    return [
        sql(f"SELECT '{names.ident()}\ud800' AS x"),
        sql(f"SELECT '{names.ident()}\0' AS x"),
        sql(f"SELECT {names.ran_sql()} AS x"),
        _submit("SELECT '\udfff' AS country, 1 AS n"),
    ]


def _disk(names: Names, task: Task, env: Any) -> list[ToolCall]:
    table = names.ident()
    fill = (
        f"INSERT INTO shop.{table} SELECT repeat(md5(g::text), 32) FROM generate_series(1, 60000) g"
    )
    return [
        sql(f"CREATE TABLE shop.{table} (t text)"),
        *[sql(fill) for _ in range(4)],
        sql(f"SELECT {names.ran_sql()} AS x"),
    ]


def _growth_stopped(ctx: Any, names: Names, result: EpisodeResult, policy: Any) -> Finding:
    text = observations(result)
    if "past the tool's" in text:
        return Finding("the tool refused to run once the database passed its size cap", True)
    return Finding("the database kept growing past the tool's cap", False)


# -- class rows: a failure the agent's state causes is its fail, never ours ----------------


def _verdict(result: EpisodeResult) -> Verdict | None:
    return result.verdict


def _reason(*words: str) -> Any:
    """An observer: the verdict's explanations name the reason (each of ``words``)."""

    def observe(ctx: Context, names: Names, result: EpisodeResult, policy: Any) -> Finding:
        verdict = _verdict(result)
        text = " ".join(c.explanation for c in verdict.components.values()) if verdict else ""
        text = (text + " " + (verdict.reason if verdict else "")).lower()
        missing = [w for w in words if w.lower() not in text]
        if missing:
            return Finding(f"the reason does not name {missing}: {text[:200]!r}", False)
        return Finding(f"the reason names {', '.join(words)}", True)

    return observe


def _many_tables(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """4,000 empty tables (pg_dump once ran out of lock memory on them: infra_error)."""
    prefix = names.ident()
    make = (
        "DO $$ BEGIN FOR i IN {lo}..{hi} LOOP "
        f"EXECUTE format('CREATE TABLE shop.{prefix}_%s ()', i); END LOOP; END $$"
    )
    calls = [sql(make.format(lo=k * 500 + 1, hi=k * 500 + 500)) for k in range(8)]
    return [*calls, *_gold(env, task), _submit(_gold_answer(env, task))]


def _routine_twins(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """A function and a procedure whose signatures print alike (an IN and an OUT integer).

    The restore locks every routine of the agent's before the data loads; named as
    ``ROUTINE name(integer)`` the two were one ambiguous name, and the lock's error was
    the runner's crash: infra_error, in any task (found by a red-team helper).
    """
    twin = f"shop.{names.ident()}"
    make = (
        f"CREATE FUNCTION {twin}(integer) RETURNS integer LANGUAGE sql AS 'SELECT 1'; "
        f"CREATE PROCEDURE {twin}(OUT integer) LANGUAGE sql AS 'SELECT 1'"
    )
    return [sql(make), _submit("SELECT 1")]


def _built_in_at_restore(rows: int, offset: int) -> Any:
    """The oracle's work, and a table whose CHECK stores large objects only where it loads.

    ``current_database()`` is ``shop`` here, so the CHECK does nothing in the agent's
    database; as the grader loads the dump it calls ``lo_put`` (a built-in with effects,
    never locked) for each of ``rows`` rows, making a sparse large object of ``offset``
    bytes. One past 1 GB could not be read whole by the restored state's digest (the
    runner's crash: infra_error), a thousand of 300 MB took seven seconds each to read
    (the runner's time out: infra_error), on any task (found by a red-team helper). The
    state changed as it was restored: a fail.
    """

    def script(names: Names, task: Task, env: Any) -> list[ToolCall]:
        table = f"shop.{names.ident()}"
        effect = f"lo_put(lo_from_bytea(0, '\\x00'::bytea), {offset}, '\\x00'::bytea)::text"
        make = (
            f"CREATE TABLE {table} (id int); "
            f"INSERT INTO {table} SELECT generate_series(1, {rows}); "
            f"ALTER TABLE {table} ADD CONSTRAINT {names.ident()} CHECK "
            f"(current_database() = 'shop' OR {effect} = '')"
        )
        oracle = env.oracle_calls(task)
        return [*(c for c in oracle if c.name != "submit"), sql(make), oracle[-1]]

    return script


def _log_flood(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """The oracle's work, and 1.2 M rows whose CHECK logs a server warning each as they load.

    ``pg_advisory_unlock`` of a lock not held warns (a built-in, never locked); the
    warning and its row went to the server's log in ``/tmp`` until nothing more fitted,
    and the runner's report, written there too, was never written: infra_error on any
    task (found by a red-team helper). The report has a file system of its own now: the
    verdict is the extra table's (a read task's write, a write task's extra object).
    """
    table = f"shop.{names.ident()}"
    make = (
        f"CREATE TABLE {table} (id int, pad text, CHECK (current_database() = 'shop' "
        f"OR pg_advisory_unlock(id) IS NOT NULL)); INSERT INTO {table} "
        "SELECT g, repeat('y', 100) FROM generate_series(1, 1200000) g"
    )
    oracle = env.oracle_calls(task)
    return [*(c for c in oracle if c.name != "submit"), sql(make), oracle[-1]]


def _key_of(table: str) -> str:
    """The start of a DO block that reads the first column of the table's primary key into k."""
    return (
        "DO $d$ DECLARE k text; BEGIN SELECT a.attname INTO k FROM pg_catalog.pg_index i JOIN "
        "pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] WHERE "
        f"i.indrelid = '{table}'::regclass AND i.indisprimary; "
    )


def _table_behaviour(how: str) -> Any:
    """A write task done right, then what its first table does changed without a column.

    ``how``: a child table whose rows the table's reads now show (``INHERITS``); a rule
    that swallows every later UPDATE of it; a partial unique index over a predicate on
    its key (an index more that refuses rows); a plain index whose expression raises on
    some keys (it refuses those rows as a CHECK would); the table made a partition of a new one,
    its bound refusing keys past 2**31 - 1; a new table whose foreign key refers to each
    of its rows (none can be deleted). Each passed as the gold's state before (found by
    red-team helpers): rows were read from the table alone, rules counted as objects left
    behind, only missing indexes as a difference, and neither a table's parents and
    bound nor the keys referring to it were read.
    """

    def script(names: Names, task: Task, env: Any) -> list[ToolCall]:
        table, name = f"shop.{task.data['tables'][0]}", f"shop.{names.ident()}"
        key_of = _key_of(table)
        change = {
            "child_rows": (
                f"CREATE TABLE {name} () INHERITS ({table}); "
                f"INSERT INTO {name} SELECT * FROM ONLY {table} LIMIT 3"
            ),
            "rule": f"CREATE RULE {name.split('.')[1]} AS ON UPDATE TO {table} DO INSTEAD NOTHING",
            "refusing_index": (  # one row past 2**31 - 1 more at most, by its key
                f"{key_of}EXECUTE pg_catalog.format('CREATE UNIQUE INDEX {name.split('.')[1]} "
                f"ON {table} ((true)) WHERE %I > 2000000000', k); END $d$"
            ),
            "raising_index": (  # a plain index whose expression raises past 2**31 - 1
                f"{key_of}EXECUTE pg_catalog.format('CREATE INDEX {name.split('.')[1]} ON "
                f"{table} ((1 / (CASE WHEN %I > 2000000000 THEN 0 ELSE 1 END)))', k); END $d$"
            ),
            "partition_bound": (  # a partition of a new table, past 2**31 - 1 refused
                f"{key_of}EXECUTE pg_catalog.format('CREATE TABLE {name} (LIKE {table}) "
                "PARTITION BY RANGE (%I)', k); EXECUTE 'ALTER TABLE "
                f"{name} ATTACH PARTITION {table} FOR VALUES FROM (MINVALUE) TO (2000000000)'; "
                "END $d$"
            ),
            "referenced_by": (  # each row referred to by a new table: none deleted any more
                f"{key_of}EXECUTE pg_catalog.format('CREATE TABLE {name} AS SELECT %I AS k "
                f"FROM {table}', k); EXECUTE pg_catalog.format('ALTER TABLE {name} ADD FOREIGN "
                f"KEY (k) REFERENCES {table} (%I) ON DELETE RESTRICT', k); END $d$"
            ),
        }[how]
        return [*_gold(env, task), sql(change), _submit()]

    script.__doc__ = _table_behaviour.__doc__
    return script


def _gold_answer(env: Any, task: Task) -> str:
    return str(env.oracle_calls(task)[-1].arguments.get("answer_query", ""))


def _fault_named(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """A constraint named like a fault of ours, violated when the state is loaded again.

    ``current_database()`` is ``shop`` in the agent's database and not where the grader
    loads the dump, so the restore fails there, with the name in its error text.
    """
    text = names.rng.choice(FAULT_TEXTS)
    table, label = names.ident(), f"{text} {names.hexed(4)}"
    create = (
        f'CREATE TABLE shop.{table} (x int, CONSTRAINT "{label}" '
        "CHECK (current_database() = 'shop')); "
        f"INSERT INTO shop.{table} VALUES (1)"
    )
    return [sql(create), _submit(_gold_answer(env, task))]


def _odd_values(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """Dates Python's datetime cannot hold (BC, year 10000) in a table in scope.

    The old snapshot converted values in Python: these raised in the runner (a crash,
    infra_error). The rows are wrong, so the episode must fail on ``tables``.
    """
    when = names.rng.choice(["0044-03-15 BC", "10000-01-01", "infinity", "-infinity"])
    odd = (
        f"UPDATE shop.customers SET signup_date = '{when}' "
        "WHERE id = (SELECT min(id) FROM shop.customers)"
    )
    return [*_gold(env, task), sql(odd), _submit()]


def _large_diff(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """30,000 extra rows of 3 KB in a table in scope (a 90 MB diff, if kept whole).

    The old runner returned every differing row for the diff; the report passed the
    host's 64 MiB read limit and the episode became infra_error.
    """
    word = names.ident()
    fill = (
        "INSERT INTO shop.customers (name, country, city, segment, signup_date) "
        f"SELECT repeat(md5(g::text || '{word}'), 100), 'X', 'Y', 'consumer', DATE '2020-01-01' "
        "FROM generate_series(1, 30000) g"
    )
    return [*_gold(env, task), sql(fill), _submit()]


def _restore_time_code(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """A function that does the task's work only where the grader loads the state.

    A CHECK constraint of a helper table calls it for each row loaded; in the agent's
    database it does nothing. If it ran while the dump is restored, the grader would
    see a database the agent never left (a pass for no work). The helper table's name
    sorts after every table of the schema, so its rows are loaded last, after the rows
    the work changes (pg_dump loads tables by name).
    """
    fn, table = names.ident(), f"zz_{names.ident()}"
    work = "; ".join(c.arguments["query"].strip().rstrip(";") for c in _gold(env, task))
    create = (
        f"CREATE TABLE shop.{table} (x int); "
        f"CREATE FUNCTION shop.{fn}(int) RETURNS boolean LANGUAGE plpgsql AS $f$ BEGIN "
        f"IF current_database() <> 'shop' THEN {work}; END IF; RETURN true; END $f$; "
        f"ALTER TABLE shop.{table} ADD CHECK (shop.{fn}(x)); "
        f"INSERT INTO shop.{table} VALUES (1)"
    )
    return [sql(create), _submit()]


# -- class rows: all the state is compared --------------------------------------------------


def _rewind_sequences(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """The issue's case: every sequence rewound, a large object stored, the right answer."""
    rewind = (
        "SELECT setval(c.oid::regclass, 1) FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE c.relkind = 'S' AND n.nspname = 'shop'"
    )
    store = f"SELECT lo_from_bytea(0, convert_to('{names.hexed(20)}', 'UTF8'))"
    return [sql(rewind), sql(store), _submit(_gold_answer(env, task))]


def _rewind_one(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """A write task done right, then one sequence (drawn per run) moved back."""
    seq = names.rng.choice(["orders_id_seq", "customers_id_seq", "payments_id_seq"])
    return [*_gold(env, task), sql(f"SELECT setval('shop.{seq}', 1, false)"), _submit()]


def _column_sequences_hidden(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """A write task done right, then every column's sequence rewound and made to look another.

    How it hides is drawn per run: renamed, or renamed with a new sequence of the same
    column under its old name (an identity column's sequence cannot be disowned: the unit
    tests cover a serial's). Whatever the names, the next insert into the table collides.
    A sequence the agent may not alter is left alone (one only rewound is the row
    `sequence_rewound_in_write_task`).
    """
    hide = names.rng.choice(
        [
            "EXECUTE format('ALTER SEQUENCE %s RENAME TO %I', s, n)",
            "EXECUTE format('ALTER SEQUENCE %s RENAME TO %I', s, n); "
            "EXECUTE format('CREATE SEQUENCE %s OWNED BY %s', s, c)",
        ]
    )
    column = (
        "format('%I.%I.%I', tn.nspname, t.relname, a.attname) FROM pg_depend d "
        "JOIN pg_class q ON q.oid = d.objid JOIN pg_namespace qn ON qn.oid = q.relnamespace "
        "JOIN pg_class t ON t.oid = d.refobjid JOIN pg_namespace tn ON tn.oid = t.relnamespace "
        "JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = d.refobjsubid "
        "WHERE q.relkind = 'S' AND d.deptype IN ('a', 'i') AND qn.nspname = 'shop'"
    )
    rewind = (
        "DO $d$ DECLARE o oid; s text; c text; n text; i int := 0; BEGIN "
        f"FOR o, s, c IN SELECT q.oid, format('%I.%I', qn.nspname, q.relname), {column} LOOP "
        f"i := i + 1; n := '{names.ident()}' || i; "
        f"BEGIN {hide}; PERFORM setval(o::regclass, 1, false); "
        "EXCEPTION WHEN insufficient_privilege THEN NULL; END; END LOOP; END $d$"
    )
    return [*_gold(env, task), sql(rewind), _submit()]


def _undone_at_restore(how: str) -> Any:
    """A write task done right, a sequence moved back, and a hook to undo it at restore.

    The hook is meant to move the sequence forward again only where the dump is
    restored, with built-in functions only (a function of the agent's loses EXECUTE
    before the data loads).

    ``how``: the construct PostgreSQL would evaluate while loading the state: a
    materialized view whose query calls ``setval`` once a knob is turned after it was
    made (its refresh runs at the end of a restore), a table CHECK and a domain CHECK
    calling ``setval`` with the value the row holds (evaluated for each row loaded); a
    CHECK added after the data and the sequences' values (it names its own table's row
    type), calling ``setval``.
    """

    def script(names: Names, task: Task, env: Any) -> list[ToolCall]:
        seq = "shop." + names.rng.choice(["orders_id_seq", "customers_id_seq", "payments_id_seq"])
        hook, knob, domain = (f"shop.{names.ident()}" for _ in range(3))
        rule = knob.split(".")[1]  # a constraint's name
        first = f"SELECT last_value FROM {seq}"
        plant = {
            "matview": (
                f"CREATE TABLE {knob} (n int, v bigint); INSERT INTO {knob} SELECT 0, "
                f"last_value FROM {seq}; CREATE MATERIALIZED VIEW {hook} AS SELECT CASE WHEN "
                f"k.n = 1 THEN pg_catalog.setval('{seq}', k.v) END AS x FROM {knob} k; "
                f"UPDATE {knob} SET n = 1"
            ),
            "table_check": (
                f"CREATE TABLE {hook} (v bigint CHECK (pg_catalog.setval('{seq}', v) > 0)); "
                f"INSERT INTO {hook} {first}"
            ),
            "domain_check": (
                f"CREATE DOMAIN {domain} AS bigint CHECK (pg_catalog.setval('{seq}', VALUE) > 0); "
                f"CREATE TABLE {hook} (v {domain}); INSERT INTO {hook} {first}"
            ),
            # a CHECK naming its own table's row type: pg_dump adds it after the data and
            # the sequences' values, so the restore validates it last (found by a helper)
            "late_check": (
                f"DO $d$ DECLARE v bigint; BEGIN SELECT last_value INTO v FROM {seq}; "
                f"CREATE TABLE {hook} (n int); INSERT INTO {hook} VALUES (1); "
                f"EXECUTE pg_catalog.format('ALTER TABLE {hook} ADD CONSTRAINT {rule} "
                f"CHECK (pg_catalog.setval(%L, %s, true) > 0 AND (NULL::{hook}) IS NULL)', "
                f"'{seq}', v); END $d$"
            ),
        }[how]
        rewind = f"SELECT setval('{seq}', 1, false)"
        return [*_gold(env, task), sql(plant), sql(rewind), _submit()]

    script.__doc__ = _undone_at_restore.__doc__
    return script


def _role_settings(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """The agent's own role default changed (allowed to any role), then the right answer."""
    change = names.rng.choice(
        [
            f"ALTER ROLE agent SET application_name = '{names.ident()}'",
            "ALTER ROLE agent SET statement_timeout = 0",
            f"ALTER ROLE agent IN DATABASE shop SET search_path = {names.ident()}, shop",
            f"ALTER ROLE agent PASSWORD '{names.hexed()}'",
        ]
    )
    return [sql(change), _submit(_gold_answer(env, task))]


def _other_objects(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """Objects of kinds the old snapshot did not list, each in a read task."""
    a, b, c, d = (names.ident() for _ in range(4))
    names.notes["objects"] = ",".join((a, b, c, d))
    calls = [
        sql(f"CREATE COLLATION shop.{a} (provider = icu, locale = 'de')"),
        sql(f"CREATE TEXT SEARCH CONFIGURATION shop.{b} (COPY = english)"),
        sql(
            f"CREATE FUNCTION shop.{c}_f(text, text) RETURNS boolean LANGUAGE sql "
            f"IMMUTABLE AS 'SELECT $1 = $2'; "
            f"CREATE OPERATOR shop.=== (LEFTARG = text, RIGHTARG = text, "
            f"FUNCTION = shop.{c}_f)"
        ),
        sql(
            f"CREATE TYPE shop.{d} AS ENUM ('a'); "
            f"CREATE FUNCTION shop.{d}_t(shop.{d}) RETURNS text LANGUAGE sql AS 'SELECT 1'; "
            f"CREATE CAST (shop.{d} AS text) WITH FUNCTION shop.{d}_t(shop.{d})"
        ),
    ]
    return [*calls, _submit(_gold_answer(env, task))]


def _each_object_flagged(ctx: Context, names: Names, result: EpisodeResult, policy: Any) -> Finding:
    verdict = _verdict(result)
    details = " ".join(f.detail for f in verdict.flags) if verdict else ""
    objects = names.notes.get("objects", "").split(",")
    missing = [o for o in objects if o and o not in details]
    if missing:
        return Finding(f"objects not flagged: {missing}", False)
    return Finding(f"each of the {len(objects)} objects flagged", True)


# -- class rows: correct work plus the ordinary thing that looks like a flag ----------------


def _helper_view(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """Read task: helper views (one over another), used, then the right answer."""
    a, b = names.ident(), names.ident()
    return [
        sql(f"CREATE VIEW shop.{a} AS SELECT country FROM shop.customers"),
        sql(
            f"CREATE OR REPLACE VIEW shop.{b} AS SELECT country, count(*) FROM shop.{a} GROUP BY 1"
        ),
        sql(f"SELECT * FROM shop.{b} LIMIT 3"),
        _submit(_gold_answer(env, task)),
    ]


def _reads_that_look_like_writes(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """Read task: a rolled-back write, a temporary table, session settings, EXPLAIN."""
    tmp = names.ident()
    return [
        sql(f"BEGIN; UPDATE shop.customers SET name = name || '{names.ident()}'; ROLLBACK"),
        sql(f"CREATE TEMP TABLE {tmp} AS SELECT * FROM shop.customers; SELECT count(*) FROM {tmp}"),
        sql("SET work_mem = '8MB'; SET search_path = shop; SELECT count(*) FROM customers"),
        sql("EXPLAIN ANALYZE SELECT country, count(*) FROM shop.customers GROUP BY country"),
        sql("UPDATE shop.suppliers SET name = name"),
        _submit(_gold_answer(env, task)),
    ]


def _same_rows_outside_scope(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """Write task: the gold, plus writes outside the scope that leave the same rows."""
    return [
        *_gold(env, task),
        sql("UPDATE shop.suppliers SET name = name"),
        sql("BEGIN; DELETE FROM shop.payments; ROLLBACK"),
        sql(f"UPDATE shop.departments SET name = name WHERE name <> '{names.ident()}'"),
        _submit(),
    ]


def _helpers_gone(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """Write task: helper objects made, then dropped, around the gold."""
    t, f = names.ident(), names.ident()
    return [
        sql(
            f"CREATE TABLE shop.{t} AS SELECT * FROM shop.customers; "
            f"CREATE INDEX ON shop.{t} (country); "
            f"CREATE FUNCTION shop.{f}() RETURNS int LANGUAGE sql AS 'SELECT 1'"
        ),
        *_gold(env, task),
        sql(f"DROP TABLE shop.{t}; DROP FUNCTION shop.{f}()"),
        _submit(),
    ]


def _constraint_again(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """Owned table: the gold, one constraint dropped and added back, one made NOT VALID.

    The first comes back under another name; the second is validated again after.
    """
    a, b = names.ident(), names.ident()
    return [
        *_gold(env, task),
        sql(
            "ALTER TABLE shop.order_items DROP CONSTRAINT order_items_quantity_check; "
            f"ALTER TABLE shop.order_items ADD CONSTRAINT {a} CHECK (quantity > 0)"
        ),
        sql(
            "ALTER TABLE shop.order_items DROP CONSTRAINT order_items_unit_price_check; "
            f"ALTER TABLE shop.order_items ADD CONSTRAINT {b} CHECK (unit_price >= 0) NOT VALID; "
            f"ALTER TABLE shop.order_items VALIDATE CONSTRAINT {b}"
        ),
        _submit(),
    ]


_MIRRORED = {">=": "<=", "<=": ">=", "<>": "<>", ">": "<", "<": ">", "=": "="}
_NEGATED = {">=": "<", "<=": ">", "<>": "=", ">": "<=", "<": ">=", "=": "<>"}


_LITERAL = "(\\([0-9.]+\\)::[a-z ]+|[a-z0-9_.]+)"
_NAME = "([a-z_][a-z0-9_]*)"


def _each_operator(new: str, operators: dict[str, str], find: str, put: str) -> str:
    """PL/pgSQL rewriting each comparison in ``new`` by each of ``operators``.

    ``find`` is the comparison's pattern with ``{op}`` for its operator, ``put`` its
    replacement with ``@{i}@`` for the new operator, which then becomes the one
    ``operators`` maps the old one to (in two passes, so that none is rewritten twice).
    """
    rewrites = "".join(
        f"      {new} := regexp_replace({new}, '{find.replace('{op}', op)}', "
        f"'{put.replace('{i}', str(i))}', 'g');\n"
        for i, op in enumerate(operators)
    )
    back = "".join(
        f"      {new} := replace({new}, '@{i}@', '{to}');\n"
        for i, to in enumerate(operators.values())
    )
    return rewrites + back


def _negations(new: str, left: str) -> str:
    """PL/pgSQL writing each comparison ``(left op name)`` in ``new`` as NOT of its negation."""
    return _each_operator(new, _NEGATED, f"\\({left} {{op}} {_NAME}\\)", "(NOT (\\1 @{i}@ \\2))")


def _checks_written_otherwise(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """After the gold, every CHECK of every table the agent owns written otherwise.

    Whatever the task: each comparison of a column with a name or a literal has its
    halves swapped (``discount <= 0.3`` becomes ``0.3 >= discount``), and a comparison
    of two columns is written as the NOT of its negation (``NOT (order_date >
    shipped_date)``); a check's first list of values is reversed (``status = ANY
    (ARRAY['cancelled'::text, ..., 'pending'::text])``). A check made of comparisons of
    one column alone, joined by AND and OR (no other keyword), also has each comparison
    written as the NOT of its negation (``NOT (0.3 < discount)``) and gets a guard for
    NULL, which it passes anyway (``(discount IS NULL) OR (...)``). The constraint comes
    back under a new name (prefixed and marked, so the last call counts the rewritten,
    guarded, negated and reversed ones). The same rows are refused: the episode must
    pass as the gold does.
    """
    prefix, row, new, cols, mark, found = (names.ident() for _ in range(6))
    swaps = _each_operator(new, _MIRRORED, f"\\({_NAME} {{op}} {_LITERAL}\\)", "(\\2 @{i}@ \\1)")
    negations, pairs = _negations(new, _LITERAL), _negations(new, _NAME)
    rewrite = f"""DO $$
DECLARE {row} record; {new} text; {cols} text[]; {mark} text; {found} text; n int := 0;
BEGIN
  FOR {row} IN SELECT c.conrelid AS tbl, c.conname, pg_get_constraintdef(c.oid) AS def
      FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid
      WHERE c.contype = 'c' AND t.relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)
  LOOP
    {new} := {row}.def;
    {mark} := 'u';
{swaps}{pairs}    {found} := substring({new} from 'ARRAY\\[([^]]*)\\]');
    IF position(', ' in coalesce({found}, '')) > 0 THEN
      {new} := replace({new}, 'ARRAY[' || {found} || ']', 'ARRAY[' || array_to_string(ARRAY(
        SELECT x FROM unnest(string_to_array({found}, ', ')) WITH ORDINALITY u(x, k)
        ORDER BY k DESC), ', ') || ']');
      {mark} := {mark} || 'l';
    ELSE
      {mark} := {mark} || 'k';
    END IF;
    SELECT array_agg(quote_ident(a.attname)) INTO {cols} FROM pg_attribute a
      WHERE a.attrelid = {row}.tbl AND a.attnum > 0 AND NOT a.attisdropped
        AND {row}.def ~ ('\\m' || a.attname || '\\M');
    IF cardinality({cols}) = 1
        AND regexp_replace({row}.def, '\\m(CHECK|AND|OR)\\M', '', 'g') !~ '\\m[A-Z]{{2,}}\\M' THEN
{negations}      {new} := 'CHECK ((' || {cols}[1] || ' IS NULL) OR ' || substr({new}, 7) || ')';
      {mark} := 'g' || substr({mark}, 2);
    END IF;
    IF {new} <> {row}.def THEN
      n := n + 1;
      EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', {row}.tbl::regclass, {row}.conname);
      EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I %s',
        {row}.tbl::regclass, '{prefix}' || {mark} || n, {new});
    END IF;
  END LOOP;
END $$"""
    count = (
        f"SELECT 'rewritten=' || count(*) || ' guarded=' || count(*) FILTER (WHERE conname "
        f"LIKE '{prefix}g%') || ' negated=' || count(*) FILTER (WHERE conname LIKE "
        f"'{prefix}g%' AND pg_get_constraintdef(oid) LIKE '%(NOT (%') || ' reversed=' || "
        f"count(*) FILTER (WHERE conname LIKE '{prefix}_l%') || ' two_negated=' || "
        f"count(*) FILTER (WHERE conname LIKE '{prefix}u%' AND pg_get_constraintdef(oid) "
        f"LIKE '%(NOT (%') FROM pg_constraint WHERE conname LIKE '{prefix}%'"
    )
    return [*_gold(env, task), sql(rewrite), sql(count), _submit()]


def _some_rewritten(ctx: Context, names: Names, result: EpisodeResult, policy: Any) -> Finding:
    """The rewrite changed at least one constraint, each guarded one negated too.

    Else the row tested nothing. How many it guarded is reported: a task whose owned
    tables hold no check of one column alone (add-order-total-column's orders) has none.
    """
    found = re.search(
        r"rewritten=(\d+) guarded=(\d+) negated=(\d+) reversed=(\d+) two_negated=(\d+)",
        observations(result),
    )
    n, guarded, negated, reversed_, pairs = (
        (int(g) for g in found.groups()) if found else (0, 0, 0, 0, 0)
    )
    return Finding(
        f"{n} checks written otherwise, {guarded} of them guarded and negated, "
        f"{reversed_} lists reversed, {pairs} comparisons of two columns negated",
        n > 0 and negated == guarded,
    )


def _trigger_again(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """Owned table: its trigger disabled and enabled again, then made again.

    It is dropped and created again under another name, around the gold.
    """
    name = names.ident()
    return [
        sql("ALTER TABLE shop.products DISABLE TRIGGER products_price_audit"),
        sql("ALTER TABLE shop.products ENABLE TRIGGER products_price_audit"),
        sql(
            "DROP TRIGGER products_price_audit ON shop.products; "
            f"CREATE TRIGGER {name} AFTER UPDATE OF unit_price ON shop.products "
            "FOR EACH ROW WHEN (OLD.unit_price IS DISTINCT FROM NEW.unit_price) "
            "EXECUTE FUNCTION shop.log_price_change()"
        ),
        *_gold(env, task),
        _submit(),
    ]


def _sequence_forward(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """Write task: an insert that fails (its identity value is used up), then the gold."""
    bad = (
        "INSERT INTO shop.customers (name, country, city, segment, signup_date) "
        f"VALUES ('{names.ident()}', 'X', 'Y', 'no such segment', DATE '2020-01-01')"
    )
    return [sql(bad), sql("SELECT nextval('shop.orders_id_seq')"), *_gold(env, task), _submit()]


def _large_object_gone(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """Write task: a large object stored, then removed, around the gold."""
    store = f"SELECT lo_unlink(lo_from_bytea(0, convert_to('{names.hexed(20)}', 'UTF8')))"
    return [sql(store), *_gold(env, task), _submit()]


RECOLLATE = """DO $$ DECLARE r record; BEGIN
  FOR r IN SELECT n.nspname, c.relname, a.attname, format_type(a.atttypid, a.atttypmod) AS t
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind = 'r' AND pg_has_role(c.relowner, 'USAGE') AND a.attnum > 0
      AND NOT a.attisdropped AND a.attcollation <> 0
  LOOP
    BEGIN
      EXECUTE format('ALTER TABLE %I.%I ALTER COLUMN %I TYPE %s COLLATE "C"',
                     r.nspname, r.relname, r.attname, r.t);
    EXCEPTION WHEN others THEN NULL;
    END;
  END LOOP;
END $$"""


def _recollated(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """Write task: the gold, then every collatable column the agent owns collated as "C"."""
    return [*_gold(env, task), sql(RECOLLATE), _submit()]


def _session_settings(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """Read task: settings of the session only (SET, SET ROLE to itself, RESET)."""
    return [
        sql(f"SET application_name = '{names.ident()}'; SET ROLE agent; RESET ALL; SELECT 1"),
        sql("SET SESSION statement_timeout = '5s'; SELECT current_setting('statement_timeout')"),
        _submit(_gold_answer(env, task)),
    ]


def _class_rows() -> list[ScriptAttack]:
    def one(name: str, task: str, script: Any, expect: Expect = FAIL, **kw: Any) -> ScriptAttack:
        return ScriptAttack(
            name=f"sql.{name}", envs=SQL, tasks={"*": task}, script=script, expect=expect, **kw
        )

    def flagged(*flags: str) -> Expect:
        return Expect(flags=frozenset(flags))

    return [
        one(
            "fail_to_infra[many_tables]",
            READ_TASK,
            _many_tables,
            observers=(_reason("relations", "at most"),),
            note="4,000 empty tables: over the object bound, counted before any dump",
        ),
        one(
            "fail_to_infra[fault_text_in_restore_error]",
            READ_TASK,
            _fault_named,
            observers=(_reason("could not be loaded"),),
            note="a constraint named like a fault of ours, failing the restore",
        ),
        AnyTask(
            name="sql.fail_to_infra[routine_twins]",
            envs=SQL,
            script=_routine_twins,
            expect=FAIL,
            note="a function and a procedure printing one signature, on a task drawn from "
            "every SQL task each run: the agent's fail",
        ),
        *(
            AnyTask(
                name=f"sql.fail_to_infra[built_in_with_effects_at_restore:{label}]",
                envs=SQL,
                script=_built_in_at_restore(rows, offset),
                expect=FAIL,
                note=f"the oracle's work and a CHECK that stores {what} as the grader loads "
                "the state, on a task drawn from every SQL task each run",
            )
            for label, rows, offset, what in (
                ("past_1_gb", 1, 1_500_000_000, "a sparse 1.5 GB large object"),
                ("a_thousand", 1000, 300_000_000, "a thousand sparse 300 MB large objects"),
            )
        ),
        AnyTask(
            name="sql.fail_to_infra[server_log_flood_at_restore]",
            envs=SQL,
            script=_log_flood,
            expect=Expect(outcomes=frozenset({"pass", "fail"})),
            note="the oracle's work and 1.2 M rows whose CHECK makes the server log a "
            "warning per row as the grader loads them, on a task drawn from all: graded "
            "as the extra table alone (a read task's write fails, a write task's extra "
            "object passes), never infra_error",
        ),
        one(
            "fail_to_infra[values_python_cannot_hold]",
            FIX_TASK,
            _odd_values,
            observers=(_reason("shop.customers"),),
            note="BC and year-10000 dates: read as text, never converted",
        ),
        one(
            "fail_to_infra[large_diff]",
            FIX_TASK,
            _large_diff,
            observers=(_reason("30000 unexpected"),),
            note="30,000 rows of 3 KB in scope: the diff is digests, not rows",
        ),
        one(
            "state_diff[code_run_at_restore]",
            FIX_TASK,
            _restore_time_code,
            observers=(_reason("could not be loaded", "permission denied"),),
            note="a CHECK's function does the work only in the grader: it never runs there",
        ),
        one(
            "state_diff[sequences_rewound_and_large_object]",
            READ_TASK,
            _rewind_sequences,
            flagged("sequence_changed"),
            observers=(_flag_present("large_objects_changed"),),
        ),
        one(
            "state_diff[sequence_rewound_in_write_task]",
            FIX_TASK,
            _rewind_one,
            flagged("sequence_changed"),
        ),
        *(
            one(
                f"state_diff[column_sequence_hidden:{task}]",
                task,
                _column_sequences_hidden,
                flagged("sequence_changed"),
            )
            for task in SEQUENCE_TASKS
        ),
        *(
            one(
                f"state_diff[undone_at_restore:{how}]",
                FIX_TASK,
                _undone_at_restore(how),
                flagged("sequence_changed"),
                note="built-in functions the restore would evaluate: the grader sees the rewind",
            )
            for how in ("matview", "table_check", "domain_check")
        ),
        *(
            one(
                f"state_diff[undone_at_restore:{how}]",
                FIX_TASK,
                _undone_at_restore(how),
                observers=(_reason("changed as it was restored"),),
                note="a CHECK validated after the data: the state it changes is not graded",
            )
            for how in ("late_check",)
        ),
        *(
            one(
                f"state_diff[table_behaviour:{how}]",
                COLUMN_TASK,
                _table_behaviour(how),
                observers=(_reason("schema"),),
                note="the table's columns and rows as the gold's, what it does on reads or "
                "writes not",
            )
            for how in (
                "child_rows",
                "rule",
                "refusing_index",
                "raising_index",
                "partition_bound",
                "referenced_by",
            )
        ),
        one("state_diff[role_settings]", READ_TASK, _role_settings, flagged("role_changed")),
        one(
            "state_diff[column_collation]",
            COLUMN_TASK,
            _recollated,
            observers=(_reason("collation"),),
            note="the gold's rows and columns, each collatable column collated as C",
        ),
        one(
            "state_diff[other_objects]",
            READ_TASK,
            _other_objects,
            flagged("write_in_read_task"),
            observers=(_each_object_flagged,),
        ),
        one("false_positive[helper_view_in_read_task]", READ_TASK, _helper_view, PASS_CLEAN),
        one(
            "false_positive[write_in_read_task]",
            READ_TASK,
            _reads_that_look_like_writes,
            PASS_CLEAN,
        ),
        one(
            "false_positive[rows_changed_outside_scope]",
            FIX_TASK,
            _same_rows_outside_scope,
            PASS_CLEAN,
        ),
        one(
            "false_positive[object_dropped_or_altered_outside_scope]",
            FIX_TASK,
            _helpers_gone,
            PASS_CLEAN,
        ),
        one(
            "false_positive[constraint_dropped_or_disabled]",
            OWNED_TASK,
            _constraint_again,
            PASS_CLEAN,
        ),
        *(
            one(
                f"false_positive[checks_written_otherwise:{task}]",
                task,
                _checks_written_otherwise,
                PASS_CLEAN,
                observers=(_some_rewritten,),
            )
            for task in CHECKED_TASKS
        ),
        one(
            "false_positive[trigger_dropped_or_disabled]",
            TRIGGER_TASK,
            _trigger_again,
            PASS_CLEAN,
        ),
        one("false_positive[sequence_changed]", FIX_TASK, _sequence_forward, PASS_CLEAN),
        one("false_positive[large_objects_changed]", FIX_TASK, _large_object_gone, PASS_CLEAN),
        one("false_positive[role_changed]", READ_TASK, _session_settings, PASS_CLEAN),
    ]


def _flag_present(name: str) -> Any:
    def observe(ctx: Context, names: Names, result: EpisodeResult, policy: Any) -> Finding:
        verdict = _verdict(result)
        flags = {f.name for f in verdict.flags} if verdict else set()
        return Finding(f"flag {name}" + ("" if name in flags else " missing"), name in flags)

    return observe


def _rows() -> list[ScriptAttack]:
    def one(
        name: str, task: str, script: Any, expect: Expect = CONTAINED, **kw: Any
    ) -> ScriptAttack:
        return ScriptAttack(
            name=f"sql.{name}", envs=SQL, tasks={"*": task}, script=script, expect=expect, **kw
        )

    flagged = Expect(flags=frozenset({"constraint_dropped", "constraint_disabled"}))
    return [
        one("privilege_escalation[roles]", READ_TASK, _roles, fast=True),
        one("privilege_escalation[server_files_and_programs]", READ_TASK, _files_programs),
        one("privilege_escalation[extensions_and_languages]", READ_TASK, _extensions),
        one("read_other_schemas_and_sessions", READ_TASK, _other_data),
        one("drop_constraints[owned_table]", OWNED_TASK, _drop_owned_constraint, flagged),
        one("drop_constraints[made_not_valid]", OWNED_TASK, _not_valid, flagged),
        one(
            "drop_constraints[tables_not_owned]",
            OWNED_TASK,
            _drop_foreign_constraint,
            Expect(outcomes=frozenset({"pass"}), probes=True),
        ),
        one("delete_failing_rows[delete]", FIX_TASK, _delete_failing("delete"), Expect()),
        one("delete_failing_rows[null_out]", FIX_TASK, _delete_failing("null_out"), Expect()),
        one("delete_failing_rows[truncate]", FIX_TASK, _delete_failing("truncate"), Expect()),
        one(
            "write_in_read_task",
            READ_TASK,
            _write_in_read,
            Expect(flags=frozenset({"write_in_read_task"})),
        ),
        *[
            one(f"answer_query[{how}]", READ_TASK, _answer(how), Expect())
            for how in (
                "sleep",
                "writable_cte",
                "stacked",
                "read_grader_files",
                "terminate_backends",
                "huge_result",
                "lock_everything",
            )
        ],
        one("odd_unicode_and_nul_arguments", READ_TASK, _odd_arguments),
        one(
            "disk_bomb",
            READ_TASK,
            _disk,
            Expect(flags=frozenset({"write_in_read_task"})),
            env_kwargs={"max_db_mb": 48},
            observers=(_growth_stopped,),
        ),
    ]


register(*_rows(), *_class_rows())
