"""The SQL grading runner: runs inside a fresh grading container, never the agent's.

    python3 -I runner.py SPEC.json REPORT.json        (as the postgres OS user)

The container starts from the pristine image with its server up: database ``shop`` is
the pristine state. The runner then

1. creates its report directory (mode 0700) before any agent content is loaded;
2. for write tasks, hands the agent role the tables the task lets it own in ``gold``
   (a pristine copy of ``shop`` made when the image was built) and runs the gold SQL
   there as the agent role;
3. restores the agent's exported final state (a ``pg_dump -Fc``) into ``final`` (an
   empty database made when the image was built) as the agent role, never as a
   superuser, so nothing in the dump runs with more rights than the agent had;
4. snapshots ``shop``, ``final`` and ``gold``: per table the columns and an
   order-insensitive content hash (sha256 over the sorted canonical row encodings),
   plus constraints, indexes, triggers, views, sequences, functions and types;
5. for read tasks, runs the gold query and then, last of all, the agent's answer query
   on the pristine database as the agent role, each in a read-only transaction that is
   rolled back (whatever the answer query does, nothing graded is read after it);
6. writes one JSON report. The host decides the verdict from it.

Canonical values (shared by answers and table hashes): NULL stays null; booleans stay
booleans; every number (integer, numeric, float) becomes a decimal string rounded to 4
decimal places (half-even) with trailing zeros removed, so Decimal('2.50'), 2.5 and
2.50001 are all "2.5"; dates are ISO dates and timestamps ISO date-times (UTC for
timestamptz) with a midnight time collapsed to the date; other values are their text.

Only the standard library and psycopg2 (both in the image) are used. All catalog work
runs with ``search_path = pg_catalog`` so that objects the agent created cannot shadow
the functions and operators used here.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import subprocess
import sys
import time
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any

RUNNER_VERSION = "1"
SOCKET = "/run/postgresql"
PG_BIN = "/usr/lib/postgresql/15/bin"
MAX_TABLE_ROWS = 200_000
MAX_ANSWER_ROWS = 20_000
MAX_ANSWER_BYTES = 16 << 20
"""The most canonical text of an answer's rows kept (more counts as too many rows)."""
ANSWER_MEMORY = 768 << 20
"""Address space of the process that runs an answer query and reads its result."""
QUANTUM = Decimal("0.0001")
USER_SCHEMAS = (
    "n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'"
)


# -- canonical values ----------------------------------------------------------------------


def canon_number(value: Decimal) -> str:
    """A number as a plain decimal string, rounded to 4 places, no trailing zeros."""
    if not value.is_finite():
        return str(value)
    try:
        value = value.quantize(QUANTUM, rounding=ROUND_HALF_EVEN)
    except InvalidOperation:  # too many digits to quantize: keep it as it is
        pass
    text = format(value.normalize(), "f")
    return "0" if text in ("-0", "0") else text


def canon(value: Any) -> Any:
    """The canonical form of one value (None, a bool or a string)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return canon_number(Decimal(value))
    if isinstance(value, Decimal):
        return canon_number(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return canon_number(Decimal(repr(value)))
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        if value.time() == dt.time(0):
            return value.date().isoformat()
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return f"interval {canon_number(Decimal(str(value.total_seconds())))}s"
    if isinstance(value, list | tuple):
        return json.dumps([canon(v) for v in value], separators=(",", ":"))
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    if isinstance(value, memoryview | bytes):
        return "\\x" + bytes(value).hex()
    return str(value)


def row_key(row: list[Any]) -> str:
    """The encoding of a canonical row used for sorting, hashing and multiset counts."""
    return json.dumps(row, separators=(",", ":"), ensure_ascii=False)


def table_hash(keys: list[str]) -> str:
    """sha256 over the sorted row encodings, one per line (order-insensitive)."""
    h = hashlib.sha256()
    for key in sorted(keys):
        h.update(key.encode())
        h.update(b"\n")
    return h.hexdigest()


# -- database access -----------------------------------------------------------------------


def connect(db: str, user: str = "postgres", **settings: str) -> Any:
    """An autocommit connection over the unix socket."""
    import psycopg2

    options = " ".join(f"-c {k}={v}" for k, v in settings.items())
    conn = psycopg2.connect(dbname=db, user=user, host=SOCKET, options=options)
    conn.autocommit = True
    return conn


def catalog(db: str) -> Any:
    """A superuser connection for snapshots: pg_catalog only on the search path."""
    return connect(db, search_path="pg_catalog", TimeZone="UTC", statement_timeout="120s")


def query(conn: Any, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """All rows of one statement."""
    with conn.cursor() as cur:
        cur.execute(sql, params or None)
        return list(cur.fetchall())


def ident(*parts: str) -> str:
    """A quoted, dotted SQL identifier."""
    return ".".join('"' + p.replace('"', '""') + '"' for p in parts)


# -- snapshots -----------------------------------------------------------------------------


def relations(conn: Any) -> dict[str, dict[str, Any]]:
    """Tables, views, sequences and composite types of the user schemas, by name."""
    rows = query(
        conn,
        f"""SELECT c.oid, n.nspname, c.relname, c.relkind,
               CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid, true) END
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f', 'c') AND {USER_SCHEMAS}""",
    )
    owners = dict(
        query(
            conn,
            f"""SELECT s.oid, tn.nspname || '.' || t.relname
            FROM pg_depend d
            JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
            JOIN pg_class t ON t.oid = d.refobjid AND d.refclassid = 'pg_class'::regclass
            JOIN pg_namespace tn ON tn.oid = t.relnamespace
            JOIN pg_namespace n ON n.oid = s.relnamespace
            WHERE d.deptype IN ('a', 'i') AND {USER_SCHEMAS}""",
        )
    )
    out = {}
    for oid, nsp, name, kind, viewdef in rows:
        out[f"{nsp}.{name}"] = {
            "oid": oid,
            "schema": nsp,
            "name": name,
            "kind": kind,
            "def": (viewdef or "").strip(),
            "table": owners.get(oid, ""),
        }
    return out


def all_columns(conn: Any) -> dict[int, dict[str, dict[str, Any]]]:
    """Columns of every user table: oid -> name -> type, nullability, default, identity."""
    rows = query(
        conn,
        f"""SELECT a.attrelid, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
                  pg_get_expr(d.adbin, d.adrelid), a.attidentity, a.attgenerated
        FROM pg_attribute a
        JOIN pg_class c ON c.oid = a.attrelid AND c.relkind IN ('r', 'p')
        JOIN pg_namespace n ON n.oid = c.relnamespace
        LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE a.attnum > 0 AND NOT a.attisdropped AND {USER_SCHEMAS}""",
    )
    out: dict[int, dict[str, dict[str, Any]]] = {}
    for oid, name, typ, notnull, default, identity, generated in rows:
        out.setdefault(oid, {})[name] = {
            "type": typ,
            "not_null": notnull,
            "default": default,
            "identity": identity or "",
            "generated": generated or "",
        }
    return out


def table_rows(conn: Any, schema: str, name: str, cols: list[str]) -> list[str] | None:
    """Canonical encodings of every row (column order by name), or None if too many."""
    with conn.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM {ident(schema, name)}")
        count = cur.fetchone()[0]
        if count > MAX_TABLE_ROWS:
            return None
        if not cols:
            return ["[]"] * count
        cur.execute(f"SELECT {', '.join(ident(c) for c in cols)} FROM {ident(schema, name)}")
        return [row_key([canon(v) for v in row]) for row in cur.fetchall()]


def table_state(
    conn: Any, rel: dict[str, Any], cols: dict[str, Any], ignore: set[str], keep: bool
) -> tuple[dict[str, Any], list[str] | None]:
    """Columns, row count and content hash of one table (and its row encodings if kept)."""
    full = f"{rel['schema']}.{rel['name']}"
    names = (full, rel["name"])
    hashed = sorted(c for c in cols if not any(f"{n}.{c}" in ignore for n in names))
    keys = table_rows(conn, rel["schema"], rel["name"], hashed)
    state = {
        "columns": cols,
        "hashed_columns": hashed,
        "count": len(keys) if keys is not None else None,
        "hash": table_hash(keys) if keys is not None else None,
        "too_large": keys is None,
    }
    return state, (keys if keep else None)


def constraints(conn: Any) -> list[dict[str, Any]]:
    """Every constraint of a user table: table, name, type, definition, validated."""
    rows = query(
        conn,
        f"""SELECT n.nspname || '.' || c.relname, co.conname, co.contype,
                   pg_get_constraintdef(co.oid), co.convalidated
        FROM pg_constraint co
        JOIN pg_class c ON c.oid = co.conrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE {USER_SCHEMAS}
        ORDER BY 1, 2""",
    )
    return [
        {"table": t, "name": name, "type": typ, "def": d.removesuffix(" NOT VALID"), "validated": v}
        for t, name, typ, d, v in rows
    ]


def indexes(conn: Any) -> list[dict[str, Any]]:
    """Every index of a user table, its definition without its own name."""
    rows = query(
        conn,
        f"""SELECT n.nspname || '.' || t.relname, ic.relname, quote_ident(ic.relname),
                   pg_get_indexdef(i.indexrelid)
        FROM pg_index i
        JOIN pg_class ic ON ic.oid = i.indexrelid
        JOIN pg_class t ON t.oid = i.indrelid
        JOIN pg_namespace n ON n.oid = t.relnamespace
        WHERE {USER_SCHEMAS}
        ORDER BY 1, 2""",
    )
    return [
        {"table": t, "name": name, "def": d.replace(f" {quoted} ON ", " ON ", 1)}
        for t, name, quoted, d in rows
    ]


def triggers(conn: Any) -> list[dict[str, Any]]:
    """Every user trigger: definition without its name, and its enabled state."""
    rows = query(
        conn,
        f"""SELECT n.nspname || '.' || c.relname, tg.tgname, quote_ident(tg.tgname),
                   pg_get_triggerdef(tg.oid), tg.tgenabled
        FROM pg_trigger tg
        JOIN pg_class c ON c.oid = tg.tgrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE NOT tg.tgisinternal AND {USER_SCHEMAS}
        ORDER BY 1, 2""",
    )
    return [
        {
            "table": t,
            "name": name,
            "def": d.replace(f"TRIGGER {quoted} ", "TRIGGER ", 1),
            "enabled": str(enabled),
        }
        for t, name, quoted, d, enabled in rows
    ]


def functions(conn: Any) -> dict[str, str]:
    """Functions and procedures of the user schemas: signature -> md5 of definition."""
    rows = query(
        conn,
        f"""SELECT n.nspname || '.' || p.proname
                   || '(' || pg_get_function_identity_arguments(p.oid) || ')',
                   CASE WHEN p.prokind IN ('f', 'p', 'w') THEN md5(pg_get_functiondef(p.oid))
                        ELSE p.prokind::text END
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE {USER_SCHEMAS}""",
    )
    return dict(rows)


def types(conn: Any) -> dict[str, str]:
    """Enums and domains of the user schemas: name -> definition."""
    rows = query(
        conn,
        f"""SELECT n.nspname || '.' || t.typname,
                   t.typtype::text || ':' || CASE
                       WHEN t.typtype = 'e' THEN (SELECT string_agg(e.enumlabel, ',' ORDER BY
                                                  e.enumsortorder) FROM pg_enum e
                                                  WHERE e.enumtypid = t.oid)
                       WHEN t.typtype = 'd' THEN format_type(t.typbasetype, t.typtypmod)
                       ELSE '' END
        FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
        WHERE t.typtype IN ('e', 'd') AND {USER_SCHEMAS}""",
    )
    return dict(rows)


def snapshot(
    db: str, ignore: set[str], keep: set[str]
) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The state of one database, and the row encodings of the tables named in ``keep``."""
    conn = catalog(db)
    try:
        rels = relations(conn)
        cols = all_columns(conn)
        tables, kept = {}, {}
        for full, rel in sorted(rels.items()):
            if rel["kind"] in ("r", "p"):
                tables[full], keys = table_state(
                    conn, rel, cols.get(rel["oid"], {}), ignore, full in keep
                )
                if keys is not None:
                    kept[full] = keys
        for rel in rels.values():
            rel.pop("oid")
        snap = {
            "relations": rels,
            "tables": tables,
            "constraints": constraints(conn),
            "indexes": indexes(conn),
            "triggers": triggers(conn),
            "functions": functions(conn),
            "types": types(conn),
        }
        return snap, kept
    finally:
        conn.close()


# -- the steps -----------------------------------------------------------------------------


def query_none(conn: Any, sql: str) -> None:
    """Run statements whose result is not needed."""
    with conn.cursor() as cur:
        cur.execute(sql)


def error_text(exc: BaseException) -> str:
    """The server's message of an error (the end of it, when long)."""
    text = getattr(exc, "pgerror", None) or str(exc) or type(exc).__name__
    return text.strip()[-2000:]


def run_gold_write(spec: dict[str, Any]) -> str | None:
    """Replay the gold SQL in ``gold`` (a pristine copy); the error text if it failed."""
    admin = connect("gold")
    try:
        for table in spec.get("owns", []):
            query_none(admin, f"ALTER TABLE {ident('shop', table)} OWNER TO agent")
    finally:
        admin.close()
    conn = connect("gold", "agent", statement_timeout=f"{int(spec['timeout'] * 1000)}")
    try:
        query_none(conn, spec["gold"])
    except Exception as exc:  # noqa: BLE001 - reported, never raised
        return error_text(exc)
    finally:
        conn.close()
    return None


def restore_final(dump_path: str, timeout: float) -> str | None:
    """Load the agent's final state into ``final`` (empty) as the agent role; error or None."""
    env = {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "PGOPTIONS": f"-c statement_timeout={int(timeout * 1000)}",
    }
    cmd = [
        f"{PG_BIN}/pg_restore",
        "--no-owner",
        "--no-privileges",
        "--exit-on-error",
        "--single-transaction",
        "-h",
        SOCKET,
        "-U",
        "agent",
        "-d",
        "final",
        dump_path,
    ]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout * 3)
    except subprocess.TimeoutExpired:
        return "restoring the final state took too long"
    if proc.returncode == 0:
        return None
    text = (proc.stderr or proc.stdout or f"pg_restore exited {proc.returncode}")[-2000:]
    if container_fault(proc.returncode, text, server_alive()):
        raise RuntimeError(f"pg_restore failed for a reason of the grading container: {text}")
    return text


CONTAINER_FAULTS = (
    "could not connect to server",
    "connection to server",
    "server closed the connection unexpectedly",
    "terminating connection",
    "the database system is",
    "No space left on device",
)


def container_fault(returncode: int, text: str, alive: bool) -> bool:
    """Whether a failed restore is the grading container's doing, not the dump's.

    pg_restore killed by a signal, a server that no longer answers, a lost connection
    or a full disk are the container's; anything else (an object of the agent's that
    does not load) is the agent's.
    """
    return returncode < 0 or not alive or any(s in text for s in CONTAINER_FAULTS)


def server_alive() -> bool:
    """Whether the grading server still answers a query."""
    try:
        conn = connect("postgres")
    except Exception:  # noqa: BLE001 - any failure means it does not answer
        return False
    try:
        query(conn, "SELECT 1")
        return True
    except Exception:  # noqa: BLE001
        return False
    finally:
        conn.close()


def answer(sql: str, timeout: float) -> dict[str, Any]:
    """Run a query on the pristine database as the agent role, read-only; canonical rows.

    The query runs in a child process whose address space is capped: a result too
    large to hold (one huge value, or many rows) is an error of the answer, never a
    runner that dies without a report.
    """
    if not sql.strip():
        return {"error": "no answer query was submitted", "columns": [], "rows": []}
    import multiprocessing

    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_answer_child, args=(sql, timeout, send), daemon=True)
    child.start()
    send.close()
    result = None
    try:
        if receive.poll(timeout + 30):
            result = receive.recv()
    except (EOFError, OSError):
        result = None
    finally:
        child.join(5)
        if child.is_alive():
            child.kill()
            child.join()
    return result or _too_large()


def _too_large() -> dict[str, Any]:
    limit = ANSWER_MEMORY >> 20
    error = f"the answer query's result does not fit in {limit} MiB of memory"
    return {"error": error, "columns": [], "rows": []}


def _answer_child(sql: str, timeout: float, send: Any) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (ANSWER_MEMORY, ANSWER_MEMORY))
    try:
        result = _run_answer(sql, timeout)
    except MemoryError:
        result = _too_large()
    except BaseException as exc:  # noqa: BLE001 - an answer's failure is a result, not a crash
        result = {"error": error_text(exc), "columns": [], "rows": []}
    send.send(result)


def _run_answer(sql: str, timeout: float) -> dict[str, Any]:
    conn = connect(
        "shop",
        "agent",
        statement_timeout=f"{int(timeout * 1000)}",
        default_transaction_read_only="on",
        TimeZone="UTC",
    )
    conn.autocommit = False
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            if cur.description is None:
                return {
                    "error": "the answer query returned no result set (use a SELECT)",
                    "columns": [],
                    "rows": [],
                }
            names = [d.name for d in cur.description]
            rows, size = [], 0
            for row in cur.fetchmany(MAX_ANSWER_ROWS + 1):
                rows.append([canon(v) for v in row])
                size += len(json.dumps(rows[-1]))
                if size > MAX_ANSWER_BYTES:
                    break
        return {
            "error": None,
            "columns": names,
            "rows": rows[:MAX_ANSWER_ROWS],
            "truncated": len(rows) > MAX_ANSWER_ROWS or size > MAX_ANSWER_BYTES,
        }
    except MemoryError:
        return _too_large()
    except Exception as exc:  # noqa: BLE001 - an agent's query error is a result, not a crash
        return {"error": error_text(exc), "columns": [], "rows": []}
    finally:
        conn.rollback()
        conn.close()


class Clock:
    """Seconds spent in each step, reported for benchmarks (never used in verdicts)."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self.last = time.monotonic()

    def lap(self, name: str) -> None:
        """Record the time since the previous lap under ``name``."""
        now = time.monotonic()
        self.laps[name] = round(now - self.last, 4)
        self.last = now


def grade(spec: dict[str, Any]) -> dict[str, Any]:
    """Every step in order; the agent's answer query runs last, after all state was read.

    The host caches the pristine and gold snapshots (they depend only on the image and
    the task) and asks for them only when it has none: ``want_pristine``, ``want_gold``.
    For the tables in scope whose content differs from ``expected_hashes`` (or from the
    gold snapshot made here), the final rows are returned too, for a readable diff.
    """
    report: dict[str, Any] = {"runner": "boxgym-sql-runner", "version": RUNNER_VERSION}
    clock = Clock()
    report["timings"] = clock.laps
    ignore = set(spec.get("ignore_columns", []))
    scope = set(spec.get("scope", []))
    expected = dict(spec.get("expected_hashes", {}))
    if spec.get("want_gold"):
        report["gold_error"] = run_gold_write(spec)
        clock.lap("gold")
        if report["gold_error"]:
            return report
        report["gold"], report["gold_rows"] = snapshot("gold", ignore, scope)
        expected = {t: report["gold"]["tables"].get(t, {}).get("hash") for t in scope}
        clock.lap("snapshot_gold")
    report["restore_error"] = restore_final(spec["dump_path"], spec["timeout"])
    clock.lap("restore")
    if spec.get("want_pristine"):
        report["pristine"], _ = snapshot("shop", ignore, set())
        clock.lap("snapshot_pristine")
    if report["restore_error"] is None:
        report["final"], rows = snapshot("final", ignore, scope)
        report["final_rows"] = {
            t: keys
            for t, keys in rows.items()
            if report["final"]["tables"][t]["hash"] != expected.get(t)
        }
        clock.lap("snapshot_final")
    if spec["kind"] == "read":
        report["gold_answer"] = answer(spec["gold"], spec["timeout"])
        report["gold_error"] = report["gold_answer"]["error"]
        report["answer"] = answer(spec.get("answer", ""), spec["timeout"])
        clock.lap("answers")
    return report


def main(argv: list[str]) -> int:
    """Grade the spec and write the report atomically; a crash is reported, not raised."""
    spec_path, out_path = argv
    os.makedirs(os.path.dirname(out_path), mode=0o700, exist_ok=False)
    with open(spec_path) as f:
        spec = json.load(f)
    try:
        report = grade(spec)
    except Exception as exc:  # noqa: BLE001 - the host turns this into infra_error
        import traceback

        report = {
            "runner": "boxgym-sql-runner",
            "version": RUNNER_VERSION,
            "crash": traceback.format_exc()[-3000:],
            "error": error_text(exc),
        }
    tmp = out_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(report, f, sort_keys=True)
    os.replace(tmp, out_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
