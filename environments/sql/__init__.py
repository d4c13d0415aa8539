"""SQL: answer questions about, and fix or migrate, a PostgreSQL database (see README.md)."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

import gym
import gym.authoring
import gym.sandbox
from environments.sql.grading import (
    GRADER,
    GRADER_VERSION,
    PG_BIN,
    PG_USER,
    SOCKET,
    SQLExport,
    TaskSpec,
    checked_answer,
    database_of,
    export_state,
    grade_sql,
)
from environments.sql.panel import panel
from environments.sql.runner import load_script

__all__ = ["GRADER", "GRADER_VERSION", "SQLEnv", "SQLExport"]

MAX_QUERY_BYTES = 64 << 10
CLIENT = "/usr/local/bin/boxgym-sql"
# Tables the perturbed oracle writes to, with a change that always alters a row.
_PERTURB = {
    "departments": "UPDATE shop.departments SET budget = budget + 1 WHERE id = 1",
    "suppliers": "UPDATE shop.suppliers SET name = name || ' (old)' WHERE id = 1",
    "categories": "UPDATE shop.categories SET name = name || ' (old)' WHERE id = 1",
}

PREAMBLE = """\
You are connected to a PostgreSQL 15 database named `shop` as the role `agent`; its
tables live in schema `shop` (departments, employees, customers, categories, suppliers,
products, orders, order_items, payments, price_history; views order_totals and
employee_directory). Use the `sql` tool to run SQL: each call is its own session in
autocommit mode, statements run at most {timeout:g} s, and at most {rows} rows of a
result are shown. Explore the schema as you need (information_schema, pg_catalog).

Task:
{task}
"""

OWN_PREAMBLE = """\
You are connected to a PostgreSQL 15 database as the role `agent`; its tables live in
schema `{schema}`. Use the `sql` tool to run SQL: each call is its own session in
autocommit mode, statements run at most {timeout:g} s, and at most {rows} rows of a
result are shown. Explore the schema as you need (information_schema, pg_catalog).

Task:
{task}
"""
"""The first words of a task over a database of its own (task.toml ``database``)."""

PERTURB_OWN = """DO $boxgym$
DECLARE t record; r record; n bigint;
BEGIN
  FOR t IN SELECT c.oid::pg_catalog.regclass AS rel,
                  c.relname::pg_catalog.text = ANY (ARRAY[{scope}]::pg_catalog.text[]) AS inside
           FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace s ON s.oid = c.relnamespace
           WHERE c.relkind = 'r' AND s.nspname = '{schema}'
           ORDER BY 2, c.relname
  LOOP
    CONTINUE WHEN t.inside AND NOT {read};
    FOR r IN EXECUTE pg_catalog.format('SELECT ctid FROM ONLY %s LIMIT 50', t.rel) LOOP
      BEGIN
        EXECUTE pg_catalog.format('DELETE FROM ONLY %s WHERE ctid = $1', t.rel) USING r.ctid;
        GET DIAGNOSTICS n = ROW_COUNT;
        IF n > 0 THEN RETURN; END IF;
      EXCEPTION WHEN OTHERS THEN NULL;
      END;
    END LOOP;
  END LOOP;
  PERFORM pg_catalog.lo_from_bytea(0, 'boxgym'::bytea);
END $boxgym$"""
"""The forbidden write planted in a task over its own database (any table it has): one
row deleted from the first table outside the task's that lets one of its first 50 rows
go (a foreign key may hold the others; tables it reads too, in a read task); a large
object stored when none does (a database whose tables are all in scope, or empty).
Both are flagged from the final state."""

READ_END = """
When you have the answer, call `submit` with `answer_query` set to one SELECT statement
that returns exactly the requested rows and columns, in the requested column order{order}.
It is run again on a fresh copy of the database, so it cannot use objects you create.
This task only reads: leave the database as it is. You may create new views in schema
{schema} as helpers (they are ignored) and temporary tables (they vanish with the session);
any other change fails the task: rows, sequences (nextval, setval; an insert moves one
even if it is rolled back), large objects, tables, indexes, functions, types, comments
or any other object, and role settings."""

WRITE_END = """
Change only what the task asks for: you may change the tables {tables} and nothing else
(leave every other table, and every constraint and trigger not mentioned, as it is). Do
not rewind sequences (setval), store large objects or change role settings. Helper
objects left behind do not fail the task but are reported; functions of yours are never
run when the database is graded, so nothing that has to load it may call one.
When the database is in the requested state, call `submit` (no arguments needed)."""


class SQLKeys(gym.authoring.TaskKeys):
    """A SQL task's task.toml keys (what `TaskSpec.of` reads; see environments/sql/README.md)."""

    kind: Literal["read", "write"] = "read"
    """Whether the answer is a query (read) or a change of the database (write)."""
    ordered: bool = False
    """Whether a read's rows must come in the gold's order (from the gold when unset)."""
    tables: list[str] = Field(default_factory=list)
    """The tables the task is about."""
    owns: list[str] = Field(default_factory=list)
    """Tables a write task may create or drop."""
    ignore_columns: list[str] = Field(default_factory=list)
    """Columns the comparison leaves out."""
    database: str = ""
    """The task's own database dump (`database_of`); the bundled ``shop`` when empty."""
    schema_: str = Field(default="", alias="schema")
    """The schema the task's tables live in."""


class SQLEnv(gym.ContainerEnv[SQLExport]):
    """A PostgreSQL database (``shop``) and a task: answer with a query, or change data.

    Tools: ``sql(query)`` and ``submit(answer_query="")``. The agent has no shell. Read
    tasks are graded by running the submitted query and the gold query on a pristine copy
    of the database; write tasks by comparing the agent's final database, exported with
    pg_dump, with the gold SQL replayed on a pristine copy. Both in a fresh grading
    container. Forbidden side effects (any change in a read task but a new view, rows or
    objects changed outside the task's tables, constraints or triggers dropped or
    disabled, sequences rewound, large objects stored, roles changed) are flagged.

    Args:
        statement_timeout: seconds one ``sql`` call may run (also capped by the episode).
        max_rows: rows of a result shown to the agent; the rest is counted.
        max_db_mb: size of the database (MiB) past which ``sql`` refuses to run anything
            (the server has no disk quota; its data directory is on the container layer).
        **kwargs: passed on to `gym.ContainerEnv`.
    """

    family: ClassVar[str] = "sql"
    task_keys: ClassVar[type[gym.authoring.TaskKeys]] = SQLKeys
    image: ClassVar[str] = "postgres"
    final_state_type: ClassVar[type[SQLExport]] = SQLExport
    sandbox_settings: ClassVar[dict[str, Any]] = {
        # The data directory lives on the container layer (faster to start than copying
        # it onto a tmpfs; see docs/benchmarks.md). The agent has no shell: its only way
        # in is the database, as a role that owns nothing it must keep.
        "read_only": False,
        "tmpfs": {
            "/workspace": "size=16m,uid=1000,gid=1000,mode=0755",
            "/tmp": "size=64m,mode=1777",
            "/home/agent": "size=16m,uid=1000,gid=1000,mode=0755",
        },
        "boot": ((PG_USER, "/usr/local/bin/boxgym-pg-start"),),
        # Peer authentication finds the role by the client's user name: the agent's
        # psql runs as the image's named user 1000 (it runs no program of its own).
        "own_uid": False,
    }

    def __init__(
        self,
        *,
        statement_timeout: float = 10.0,
        max_rows: int = 100,
        max_db_mb: int = 1024,
        **kwargs: Any,
    ):
        self.statement_timeout = statement_timeout
        self.max_rows = max_rows
        self.max_db_mb = max_db_mb
        super().__init__(**kwargs)

    def sample_calls(self) -> list[dict[str, Any]]:
        """Side-effect-free calls for ``action_space.sample()``."""
        return [
            {"name": "sql", "arguments": {"query": "SELECT 1"}},
            {"name": "sql", "arguments": {"query": "SELECT count(*) FROM shop.customers"}},
        ]

    @classmethod
    def task_inputs(cls, task: gym.Task) -> list[Path]:
        """The task's database dump when it is one the family's tasks share."""
        try:
            dump = database_of(task)
        except gym.ConfigError:
            return []
        return [dump] if dump is not None else []

    def setup(self, task: gym.Task, sandbox: gym.sandbox.Sandbox) -> None:
        """Load the task's own database (if any), hand the agent the tables it may restructure."""
        spec = TaskSpec.of(task)
        if spec.database:
            self._load_database(task, spec, sandbox)
        owns = spec.owns
        if not owns:
            return
        statements = "; ".join(f"ALTER TABLE {spec.table(t)} OWNER TO agent" for t in owns)
        cmd = [
            f"{PG_BIN}/psql",
            "-X",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            SOCKET,
            "-d",
            "shop",
            "-c",
            statements,
        ]
        result = sandbox.exec(cmd, user=PG_USER, timeout=30)
        if not result.ok:
            raise gym.SandboxError(f"could not prepare task {task.id}: {result.stderr[-500:]}")

    def _load_database(self, task: gym.Task, spec: TaskSpec, sandbox: gym.sandbox.Sandbox) -> None:
        """Replace the bundled ``shop`` schema with the task's own database (`load_script`)."""
        cmd = [f"{PG_BIN}/psql", "-X", "-q", "-h", SOCKET, "-d", "shop", "-f", "-"]
        result = sandbox.exec(
            cmd,
            user=PG_USER,
            timeout=120,
            stdin=load_script(spec.dump()),
            env={"PGOPTIONS": "-c client_min_messages=warning"},
        )
        if not result.ok:
            raise gym.SandboxError(
                f"could not load the database of task {task.id} ({spec.database}): "
                f"{result.stderr[-800:]}"
            )

    def prompt(self, task: gym.Task) -> str:
        """The task, with what the agent needs to know about the database and the tools."""
        spec = TaskSpec.of(task)
        head = OWN_PREAMBLE if spec.database else PREAMBLE
        text = head.format(
            timeout=self.statement_timeout,
            rows=self.max_rows,
            task=task.prompt.strip(),
            schema=spec.schema_name,
        )
        if spec.kind == "read":
            order = " and row order" if spec.ordered else " (any row order)"
            return text + READ_END.format(order=order, schema=spec.schema_name)
        tables = ", ".join(spec.table(t) for t in spec.scope)
        return text + WRITE_END.format(tables=tables)

    # -- tools ---------------------------------------------------------------------------

    @gym.tool(kind="write")
    def sql(self, query: str) -> str:
        """Run SQL on the shop database and show the result of each statement.

        Args:
            query: one or more SQL statements separated by semicolons. Each call is its
                own session in autocommit mode (several statements run as one transaction).
        """
        sandbox = self._sandbox()
        if not query.strip():
            return "Error: the query is empty"
        try:
            data = query.encode()
        except UnicodeEncodeError as exc:
            return f"Error: the query is not valid Unicode text ({exc.reason} at {exc.start})"
        if len(data) > MAX_QUERY_BYTES or "\0" in query:
            return (
                f"Error: the query must be text of at most {MAX_QUERY_BYTES} bytes, "
                "without NUL characters"
            )
        limit = max(1.0, min(self.statement_timeout, self.command_timeout()))
        cmd = (
            f"{CLIENT} --timeout {limit:g} --max-rows {self.max_rows} --max-cell 200 "
            f"--max-db-mb {self.max_db_mb} "
            f"{base64.b64encode(data).decode()}"
        )
        result = sandbox.run(cmd, timeout=limit + 10, max_output=self.max_output)
        self.note(result.exit_code, result.timed_out)
        if result.timed_out:
            self._stop_sessions(sandbox)
            return f"Error: the statement did not finish within {limit:g} s and was stopped"
        text = result.stdout.rstrip("\n")
        if result.stderr.strip():
            text += "\n[stderr] " + result.stderr.strip()[-2000:]
        return text or "OK"

    @gym.tool(kind="final")
    def submit(self, answer_query: str = "") -> str:
        """Finish the task; it is then graded.

        Args:
            answer_query: for tasks that ask a question, one SELECT statement returning
                the requested rows (it is run again on a fresh copy of the database).
                Leave empty for tasks that ask to change the database.
        """
        return ""

    def _sandbox(self) -> gym.sandbox.Sandbox:
        if self.sandbox is None:
            raise gym.ConfigError("no episode is running: call reset() first")
        return self.sandbox

    def _stop_sessions(self, sandbox: gym.sandbox.Sandbox) -> None:
        stop = (
            "SELECT pg_terminate_backend(pid, 3000) FROM pg_stat_activity WHERE usename = 'agent'"
        )
        sandbox.exec(
            [f"{PG_BIN}/psql", "-X", "-q", "-h", SOCKET, "-d", "postgres", "-c", stop],
            user=PG_USER,
            timeout=15,
        )

    # -- scripted solutions (validation) -----------------------------------------------

    def oracle_calls(self, task: gym.Task) -> list[gym.ToolCall]:
        """The gold SQL run through the tool, then submitted (as the answer, for reads)."""
        spec = TaskSpec.of(task)
        gold = spec.gold.strip()
        final = {"answer_query": gold} if spec.kind == "read" else {}
        return [
            gym.ToolCall(name="sql", arguments={"query": gold}),
            gym.ToolCall(name="submit", arguments=final),
        ]

    def panel_calls(self, task: gym.Task) -> dict[str, list[gym.ToolCall]]:
        """Generic cheating policies, each doing none of the task's work (see `panel`)."""
        return panel(TaskSpec.of(task))

    def scripted_state(
        self,
        task: gym.Task,
        calls: Sequence[gym.ToolCall],
        untouched: SQLExport | None = None,
    ) -> SQLExport | None:
        """A lone ``submit``: the untouched database with its answer query.

        Submitting changes nothing in the database, so an episode that only submits
        leaves the state of one that submitted nothing (``untouched``, exported from a
        container), with the answer query it gave. None for any other script, or when
        there is no untouched state to start from.
        """
        if untouched is None or untouched.problem or len(calls) != 1 or calls[0].name != "submit":
            return None
        answer, problem = checked_answer(_answer_of(calls[0]))
        return untouched.model_copy(update={"answer_query": answer, "answer_problem": problem})

    def perturbed_calls(self, task: gym.Task) -> list[gym.ToolCall]:
        """The oracle plus one write to a table outside the task's scope (must be flagged).

        In the bundled database, a fixed change of a ``shop`` table; in a task's own
        database, `PERTURB_OWN` (a row of any table it has outside the scope).
        """
        spec = TaskSpec.of(task)
        if spec.database:
            scope = ", ".join(f"'{t}'" for t in spec.scope)
            query = PERTURB_OWN.format(
                scope=scope, schema=spec.schema_name, read=str(spec.kind == "read").lower()
            )
        else:
            query = _PERTURB[next(t for t in _PERTURB if t not in spec.scope)]
        calls = self.oracle_calls(task)
        extra = gym.ToolCall(name="sql", arguments={"query": query})
        return [*calls[:-1], extra, calls[-1]]

    # -- grading -------------------------------------------------------------------------

    def export(self, task: gym.Task, sandbox: gym.sandbox.Sandbox) -> SQLExport:
        """Freeze the agent's database, count and dump it, with the submitted answer query."""
        return export_state(sandbox, TaskSpec.of(task).kind, _answer_of(self.final_call))

    def grade(
        self, task: gym.Task, final_state: SQLExport, trajectory: Sequence[gym.StepRecord]
    ) -> gym.Verdict:
        """Grade the dump and the answer in a fresh grading container."""
        return grade_sql(task, final_state, self.image_digest, sandboxes=self.sandboxes)


def _answer_of(final: gym.ToolCall | None) -> str:
    """The answer query a ``submit`` call gave ("" when none, or when it is not text)."""
    value = final.arguments.get("answer_query", "") if final else ""
    return value if isinstance(value, str) else ""
