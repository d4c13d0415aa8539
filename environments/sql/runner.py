"""The SQL grading runner: runs inside a fresh grading container, never the agent's.

    python3 -I runner.py SPEC.json REPORT.json        (as the postgres OS user)

The container starts from the pristine image with its server up: database ``shop`` is
the pristine state. The runner then

1. creates its report directory (mode 0700) before any agent content is loaded and,
   for a task with a database of its own (``database_path``: the task's dump, never
   the agent's), loads it into ``shop`` (and ``gold`` for write tasks) as the agent's
   container did at reset (`load_database`);
2. snapshots the pristine ``shop`` (when the host has no cached copy), roles included;
3. for write tasks, hands the agent role the tables the task lets it own in ``gold``
   (a pristine copy of ``shop`` made when the image was built), runs the gold SQL
   there as the agent role (`gold_session`) and snapshots the result (when not cached);
4. restores the agent's exported final state (a ``pg_dump -Fc``) into ``final`` (an
   empty database made when the image was built) as the agent role, never as a
   superuser, in two steps: the definitions first, then, once every function of the
   final state has lost its EXECUTE privilege (trigger functions excepted: they cannot
   be called, only fire), the data and the indexes, constraints and triggers, with no
   materialized view refreshed (`restore_list`: a refresh runs the view's query, and
   built-in functions have effects too). So no code of the agent's runs while its state
   is loaded: what the snapshot reads is what the agent left, not what its functions
   or queries would make of it;
5. counts the objects of ``final`` against the same bounds as the export, then
   snapshots it in a child process whose address space is capped (`FINAL_MEMORY`);
6. for read tasks, runs the gold query and then, last of all, the agent's answer query
   on the pristine database as the agent role, each in a read-only transaction that is
   rolled back, each in a capped child process. Nothing of the gold's run is left for
   the answer query to read: the gold runs under the superuser's login, become the agent
   role (`gold_session`: the server shows a session's query text only to the role it
   logged in as, and the agent role cannot read other roles' statistics), and before the
   answer runs its session has ended and the statistics counters of ``shop`` are zeroed
   (`forget_gold`);
7. writes one JSON report, never larger than `MAX_REPORT_BYTES`. The host decides the
   verdict from it.

Provenance: whatever goes wrong from step 4 on, while the agent's state or answer is
being read (a restore that fails, an object over a bound, a value that cannot be held,
a server that stops answering), is reported as the agent's (``final_error``, an answer
``error``), never as a crash, and the decision never reads an error's text. A crash is
only a bug of this runner (an exception of another kind) or a failure of steps 1-3,
which read nothing of the agent's. With an error of the agent's state or answer the
runner also reports the free space of the server's file system and how much the agent's
state took there (the growth of the data folder since before the restore): the host's
measures of whose a full disk is.

A snapshot describes everything of a database a task could change: per table its
columns, table options and an order-insensitive content hash (sha256 over the sorted
sha256 digests of the canonical rows); every relation (views with their definitions),
sequence (definition, last value, is_called), constraint, index, trigger, function,
type, large object (size and md5), schema, extension, and every other object (rules,
policies, operators, casts, collations, text search objects, statistics, comments...),
each by name with a definition. Long definitions are cut, with the md5 of the whole.

Canonical values of answers (`canon`): NULL stays null; booleans stay booleans; every
number (integer, numeric, float) becomes a decimal string rounded to 4 decimal places
(half-even) with trailing zeros removed, so Decimal('2.50'), 2.5 and 2.50001 are all
"2.5"; dates are ISO dates and timestamps ISO date-times (UTC for timestamptz) with a
midnight time collapsed to the date; other values are their text. Table rows
(`canon_text`) are read as PostgreSQL's text output (no client-side type conversion,
so no value can fail to convert): numbers are rounded the same way, booleans become
booleans, every other value is its text (ISO dates, timestamps in UTC).

Only the standard library and psycopg2 (both in the image) are used. All catalog work
runs with ``search_path = pg_catalog`` and calls built-in functions only (no cast,
operator or function the agent could have defined), so objects the agent created
cannot shadow or hook what the runner runs as a superuser.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from decimal import MAX_EMAX, MIN_EMIN, ROUND_HALF_EVEN, Context, Decimal, InvalidOperation
from typing import Any

RUNNER_VERSION = "2"
SOCKET = "/run/postgresql"
PG_BIN = "/usr/lib/postgresql/15/bin"
PGDATA = "/var/lib/boxgym/pgdata"
MAX_TABLE_ROWS = 200_000
MAX_ANSWER_ROWS = 20_000
MAX_ANSWER_BYTES = 16 << 20
"""The most canonical text of an answer's rows kept (more counts as too many rows)."""
ANSWER_MEMORY = 768 << 20
"""Address space of the process that runs an answer query and reads its result."""
FINAL_MEMORY = 768 << 20
"""Address space of the process that snapshots the agent's final state."""
CHANGED_SECONDS = 60.0
"""How long reading whether the restored state changed may take (`changed_on_restore`):
past it, the state is the agent's fail (a database error while its state is read)."""
FINAL_SECONDS = 120.0
"""The most time the snapshot of the final state may take."""
RESTORE_SECONDS = 120.0
"""The most time both steps of the restore may take together."""
MAX_REPORT_BYTES = 40 << 20
"""The report's size past which the final state's part is replaced by an error."""
DEF_CHARS = 1000
"""Characters of a definition kept (a longer one is cut and ends with its md5)."""
PREVIEW_CHARS = 300
"""Characters of a row's encoding kept to show it in a diff."""
SAMPLES = 3
"""Rows shown each way in a diff."""
FETCH_ROWS = 2000
"""Rows fetched at a time from a table (server-side cursor)."""
QUANTUM = Decimal("0.0001")
FIRST_USER_OID = 16384
"""PostgreSQL's FirstNormalObjectId: every object made after initdb has an oid >= this."""
USER_SCHEMAS = (
    "n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'"
)

LIMITS: dict[str, int] = {
    "relations": 1000,
    "columns": 20_000,
    "functions": 1000,
    "types": 4000,
    "constraints": 2000,
    "triggers": 2000,
    "objects": 10_000,
    "comments": 2000,
    "large_objects": 1000,
    "large_object_mb": 64,
    "database_mb": 256,
}
"""What a final state may hold, counted before it is dumped (in the agent's container)
and again before it is read here. ``relations`` counts every pg_class row made after
initdb (tables, indexes, sequences, views, TOAST tables); ``objects`` every dependency
row of such an object (every kind, a catch-all). The pristine database holds 56
relations, 156 columns, 1 function, 24 types, 39 constraints, 45 triggers (internal
ones included), 254 objects and 9 MiB."""

LIMIT_WORDS: dict[str, str] = {
    "relations": "relations (tables, indexes, sequences, views, TOAST tables)",
    "columns": "columns",
    "functions": "functions",
    "types": "types",
    "constraints": "constraints",
    "triggers": "triggers",
    "objects": "catalog objects",
    "comments": "comments",
    "large_objects": "large objects",
    "large_object_mb": "MiB of large objects",
    "database_mb": "MiB of database",
}


def _digest(rows: str) -> str:
    """SQL of a bigint (60 bits of md5) of ``rows``' ordered text, 0 for none."""
    return f"('x' || substr(md5(coalesce(({rows}), '')), 1, 15))::bit(60)::bigint"


STATE_PARTS = f"""'sequences_state', {
    _digest(
        "SELECT string_agg(format('%I.%I=%s', n.nspname, c.relname, "
        "pg_sequence_last_value(c.oid)), ',' ORDER BY n.nspname, c.relname) "
        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        f"WHERE c.relkind = 'S' AND c.oid >= {FIRST_USER_OID} AND c.relpersistence <> 't' "
        "AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_class'::regclass "
        "AND d.objid = c.oid AND d.deptype = 'e')"
    )
},
    'large_objects_state', {
    _digest(
        "SELECT string_agg(format('%s=%s', l.oid, (SELECT md5(string_agg(format('%s:%s', "
        "p.pageno, md5(p.data)), ',' ORDER BY p.pageno)) FROM pg_largeobject p "
        "WHERE p.loid = l.oid)), ',' ORDER BY l.oid) FROM pg_largeobject_metadata l"
    )
}"""
"""What built-in functions with effects change (``setval``, ``lo_unlink``...), as two
integers: each sequence's last value by name, each large object's stored pages by oid
(the sequences a dump carries: no temporary one, none of an extension's). A large
object is read by the pages it stores, never whole: one of 1.5 GB that stores two
pages (``lo_put`` past its end) could not be read whole (over 1 GB), and a thousand of
300 MB took seven seconds each (red-team helper S)."""

STATE_KEYS = ("sequences_state", "large_objects_state")
"""The names of `STATE_PARTS`' two integers."""

STATE_SQL = f"SELECT json_build_object({STATE_PARTS})"
"""The `STATE_PARTS` of the current database, one JSON object (sessions resolving names
in pg_catalog only, as the census's)."""

CENSUS_SQL = f"""SELECT json_build_object(
    'relations', (SELECT count(*) FROM pg_catalog.pg_class WHERE oid >= {FIRST_USER_OID}),
    'columns', (SELECT count(*) FROM pg_catalog.pg_attribute
                WHERE attrelid >= {FIRST_USER_OID} AND attnum > 0),
    'functions', (SELECT count(*) FROM pg_catalog.pg_proc WHERE oid >= {FIRST_USER_OID}),
    'types', (SELECT count(*) FROM pg_catalog.pg_type WHERE oid >= {FIRST_USER_OID}),
    'constraints', (SELECT count(*) FROM pg_catalog.pg_constraint
                    WHERE oid >= {FIRST_USER_OID}),
    'triggers', (SELECT count(*) FROM pg_catalog.pg_trigger WHERE oid >= {FIRST_USER_OID}),
    'objects', (SELECT count(*) FROM pg_catalog.pg_depend WHERE objid >= {FIRST_USER_OID}),
    'comments', (SELECT count(*) FROM pg_catalog.pg_description
                 WHERE objoid >= {FIRST_USER_OID}),
    'large_objects', (SELECT count(*) FROM pg_catalog.pg_largeobject_metadata),
    'large_object_mb', (SELECT coalesce(sum(pg_catalog.octet_length(data)), 0) >> 20
                        FROM pg_catalog.pg_largeobject),
    'database_mb', pg_catalog.pg_database_size(pg_catalog.current_database()) >> 20,
    'routines', (SELECT count(*) FROM pg_catalog.pg_proc WHERE oid >= {FIRST_USER_OID}
                 AND prorettype NOT IN ('pg_catalog.trigger'::pg_catalog.regtype,
                                        'pg_catalog.event_trigger'::pg_catalog.regtype)),
    'agent_sessions', (SELECT count(*) FROM pg_catalog.pg_stat_activity
                       WHERE usename = 'agent'),
    {STATE_PARTS})"""
"""The object counts of the current database: one JSON object of integers only. Besides
the bounded counts (`LIMITS`): ``routines``, the functions that could be called (not
trigger functions), and ``agent_sessions``, the agent's sessions still alive."""

CENSUS_EXTRA = ("routines", "agent_sessions", *STATE_KEYS)
"""Counts of the census that are not bounds."""

WITHIN_SQL = " AND ".join(f"(c.j->>'{k}')::bigint <= {v}" for k, v in LIMITS.items())
"""True when the census ``c.j`` is within `LIMITS` (for the export's shell script)."""

ROLES_SQL = """SELECT pg_catalog.json_build_object(
  'roles', (SELECT coalesce(pg_catalog.json_agg(pg_catalog.json_build_object(
      'name', r.rolname, 'super', r.rolsuper, 'inherit', r.rolinherit,
      'createrole', r.rolcreaterole, 'createdb', r.rolcreatedb,
      'login', CASE WHEN r.rolname = 'agent' THEN NULL ELSE r.rolcanlogin END,
      'replication', r.rolreplication, 'bypassrls', r.rolbypassrls,
      'connlimit', r.rolconnlimit,
      'valid_until', pg_catalog.date_part('epoch', r.rolvaliduntil)::pg_catalog.text,
      'password', pg_catalog.md5(coalesce(r.rolpassword, '')),
      'settings', (SELECT coalesce(pg_catalog.json_agg(pg_catalog.json_build_array(
              coalesce(d.datname::pg_catalog.text, ''),
              pg_catalog.md5(pg_catalog.array_to_string(s.setconfig, pg_catalog.chr(10))))
              ORDER BY d.datname), '[]')
          FROM pg_catalog.pg_db_role_setting s
          LEFT JOIN pg_catalog.pg_database d ON d.oid = s.setdatabase
          WHERE s.setrole = r.oid),
      'member_of', (SELECT coalesce(pg_catalog.json_agg(pg_catalog.json_build_array(
              g.rolname::pg_catalog.text, m.admin_option) ORDER BY g.rolname), '[]')
          FROM pg_catalog.pg_auth_members m JOIN pg_catalog.pg_authid g ON g.oid = m.roleid
          WHERE m.member = r.oid)) ORDER BY r.rolname), '[]')
      FROM pg_catalog.pg_authid r WHERE r.rolname !~ '^pg_'),
  'database_settings', (SELECT coalesce(pg_catalog.json_agg(pg_catalog.json_build_array(
          coalesce(d.datname::pg_catalog.text, ''),
          pg_catalog.md5(pg_catalog.array_to_string(s.setconfig, pg_catalog.chr(10))))
          ORDER BY d.datname), '[]')
      FROM pg_catalog.pg_db_role_setting s
      LEFT JOIN pg_catalog.pg_database d ON d.oid = s.setdatabase
      WHERE s.setrole = 0))"""
"""Every role (attributes, an md5 of its password and of each of its settings, its
memberships) and the per-database settings: one JSON object. No text in it comes from
the agent: it cannot create roles or databases, and settings and passwords are hashed.
The agent's LOGIN attribute is left out (the export turns it off to freeze the state)."""


class Bound(Exception):
    """The agent's final state is past one of the runner's bounds (the agent's fail)."""


# -- canonical values ----------------------------------------------------------------------


def canon_number(value: Decimal) -> str:
    """A number as a plain decimal string, rounded to 4 places, no trailing zeros.

    Exact to its last digit whatever its size: the arithmetic's precision is the
    number's own digits, not the default 28 (under which two 30-digit numbers that
    differ in their last digits read as one).
    """
    if not value.is_finite():
        return str(value)
    _, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    exact = Context(prec=len(digits) + max(exponent, 0) + 8, Emax=MAX_EMAX, Emin=MIN_EMIN)
    value = value.quantize(QUANTUM, rounding=ROUND_HALF_EVEN, context=exact)
    text = format(value.normalize(context=exact), "f")
    return "0" if text in ("-0", "0") else text


def canon(value: Any) -> Any:
    """The canonical form of one answer value (None, a bool or a string)."""
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


_INTEGER = re.compile(r"-?[1-9][0-9]{0,26}|0")
_SHORT_DECIMAL = re.compile(r"-?[0-9]{1,20}\.[0-9]{0,4}")


def canon_text(category: str, text: str | None) -> Any:
    """The canonical form of one table value, from its PostgreSQL text and type category.

    Total: any text gives a value (a number that does not parse stays its text).
    """
    if text is None:
        return None
    if category == "N":
        if _INTEGER.fullmatch(text):  # PostgreSQL prints integers plainly: already canonical
            return text
        if _SHORT_DECIMAL.fullmatch(text):  # 4 places or fewer: no rounding to do
            out = text.rstrip("0").rstrip(".")
            return "0" if out in ("-0", "0", "") else out
        try:
            return canon_number(Decimal(text))
        except (InvalidOperation, ValueError):
            return text
    if category == "B":
        return text == "t"
    return text


def row_key(row: list[Any]) -> str:
    """The encoding of a canonical row (JSON, without spaces)."""
    return json.dumps(row, separators=(",", ":"), ensure_ascii=False)


def row_digest(key: str) -> str:
    """The sha256 (hex) of a row's encoding: what table hashes and diffs count."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def table_hash(digests: list[str]) -> str:
    """sha256 over the sorted row digests, one per line (order-insensitive)."""
    h = hashlib.sha256()
    for digest in sorted(digests):
        h.update(digest.encode())
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
    """A superuser connection for snapshots: pg_catalog only on the search path.

    One repeatable-read, read-only transaction (every read sees one state), and every
    value arrives as PostgreSQL's text (no client-side conversion).
    """
    import psycopg2.extensions as ext

    conn = connect(
        db,
        search_path="pg_catalog",
        TimeZone="UTC",
        DateStyle="ISO",
        IntervalStyle="postgres",
        extra_float_digits="1",
        statement_timeout="120s",
    )
    raw = ext.new_type(tuple(ext.string_types), "BOXGYM_RAW", lambda value, cur: value)
    ext.register_type(raw, conn)
    conn.autocommit = False
    conn.set_session(isolation_level="REPEATABLE READ", readonly=True)
    return conn


def query(conn: Any, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """All rows of one statement."""
    with conn.cursor() as cur:
        cur.execute(sql, params or None)
        return list(cur.fetchall())


def ident(*parts: str) -> str:
    """A quoted, dotted SQL identifier."""
    return ".".join('"' + p.replace('"', '""') + '"' for p in parts)


def short(expr: str, limit: int = DEF_CHARS) -> str:
    """SQL for ``expr`` as text of at most about ``limit`` characters (cut: md5 added)."""
    return (
        f"(SELECT CASE WHEN length(x) > {limit} THEN left(x, {limit}) || ' ...md5:' || md5(x)"
        f" ELSE x END FROM (SELECT ({expr})::text AS x) AS s)"
    )


def as_bool(text: Any) -> bool:
    """A boolean read as PostgreSQL's text."""
    return bool(text == "t")


def as_int(text: Any) -> int:
    """An integer read as PostgreSQL's text (0 for NULL)."""
    return int(text) if text is not None else 0


# -- bounds --------------------------------------------------------------------------------


def census(conn: Any) -> dict[str, int]:
    """The object counts of a database (`CENSUS_SQL`)."""
    ((raw,),) = query(conn, CENSUS_SQL)
    data = json.loads(raw)
    return {k: int(data[k]) for k in LIMITS}


def over_limits(counts: dict[str, int]) -> list[str]:
    """The bounds a census goes past, in words (empty when within all of them)."""
    return [
        f"{counts[k]} {LIMIT_WORDS[k]} (at most {limit})"
        for k, limit in LIMITS.items()
        if counts.get(k, 0) > limit
    ]


# -- snapshots -----------------------------------------------------------------------------


_RULES_OF = (
    "(SELECT string_agg(pg_get_ruledef(r.oid), ' ' ORDER BY r.rulename) FROM pg_rewrite r "
    "WHERE r.ev_class = c.oid AND r.rulename <> '_RETURN')"
)
"""The rules of relation ``c`` but a view's own, in one text: part of a table's props, as
what it does on a write is (a rule DO INSTEAD NOTHING swallows every UPDATE)."""


_REFERENCED_BY = (
    "(SELECT string_agg(f.conrelid::regclass::text || ' ' || pg_get_constraintdef(f.oid), "
    "'; ' ORDER BY f.conrelid::regclass::text, pg_get_constraintdef(f.oid)) "
    "FROM pg_constraint f WHERE f.contype = 'f' AND f.confrelid = c.oid)"
)
"""The foreign keys that refer to relation ``c``, in one text: part of a table's props, as
what it takes is (a row another table refers to can no longer be deleted freely)."""


def relations(conn: Any) -> dict[str, dict[str, Any]]:
    """Tables, views, sequences and composite types of the user schemas, by name.

    A relation's ``props`` are what it takes and does beyond its columns and
    constraints: persistence, row security, options, the tables inheriting it and those
    it inherits from or is a partition of (with its bound), the foreign keys referring to
    it, its rules. A table made a partition of a new one refuses the rows outside its
    bound (a red-team helper's unearned pass, before the parent and bound were read).
    """
    rows = query(
        conn,
        f"""SELECT c.oid, n.nspname, c.relname, c.relkind,
               {short("CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid, true) END")},
               concat('persistence=', c.relpersistence, ' rls=', c.relrowsecurity,
                      ' force_rls=', c.relforcerowsecurity, ' replica_identity=',
                      c.relreplident, ' options=', array_to_string(c.reloptions, ','),
                      ' children=', (SELECT string_agg(h.inhrelid::regclass::text, ','
                                                       ORDER BY h.inhrelid::regclass::text)
                                     FROM pg_inherits h WHERE h.inhparent = c.oid),
                      ' parents=', (SELECT string_agg(h.inhparent::regclass::text, ','
                                                      ORDER BY h.inhparent::regclass::text)
                                    FROM pg_inherits h WHERE h.inhrelid = c.oid),
                      ' bound=', {short("pg_get_expr(c.relpartbound, c.oid)")},
                      ' referenced_by=', {short(_REFERENCED_BY)},
                      ' rules=', {short(_RULES_OF)})
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
    for oid, nsp, name, kind, viewdef, props in rows:
        out[f"{nsp}.{name}"] = {
            "oid": oid,
            "schema": nsp,
            "name": name,
            "kind": kind,
            "def": (viewdef or "").strip(),
            "props": props or "",
            "table": owners.get(oid, ""),
        }
    return out


def all_columns(conn: Any) -> dict[str, dict[str, dict[str, Any]]]:
    """Columns of every user table: oid -> name -> type, nullability, default, identity.

    A column's collation is part of its type: ``format_type`` leaves it out, so it is
    read on its own (the collation's name when it is not the type's, '' when it is).
    Each column also carries its type category (``category``), used to read its values.
    """
    rows = query(
        conn,
        f"""SELECT a.attrelid, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
                  {short("pg_get_expr(d.adbin, d.adrelid)")}, a.attidentity, a.attgenerated,
                  t.typcategory,
                  CASE WHEN a.attcollation <> t.typcollation
                       THEN a.attcollation::regcollation::text ELSE '' END
        FROM pg_attribute a
        JOIN pg_class c ON c.oid = a.attrelid AND c.relkind IN ('r', 'p')
        JOIN pg_namespace n ON n.oid = c.relnamespace
        JOIN pg_type t ON t.oid = a.atttypid
        LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE a.attnum > 0 AND NOT a.attisdropped AND {USER_SCHEMAS}""",
    )
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for oid, name, typ, notnull, default, identity, generated, category, collation in rows:
        out.setdefault(oid, {})[name] = {
            "type": typ,
            "collation": collation or "",
            "not_null": as_bool(notnull),
            "default": default,
            "identity": identity or "",
            "generated": generated or "",
            "category": category or "",
        }
    return out


class Rows:
    """The digests of a table's rows, with the previews of a few of them.

    ``keep_all``: keep every row's preview (the gold state, which the host caches).
    Otherwise the previews of the `SAMPLES` smallest digests not in ``expected`` are
    kept (the unexpected rows a diff shows), so memory stays bounded whatever the rows
    hold.
    """

    def __init__(self, keep_all: bool, expected: set[str] | None) -> None:
        self.digests: list[str] = []
        self.keep_all = keep_all
        self.expected = expected
        self.previews: dict[str, str] = {}

    def add(self, key: str) -> None:
        """Count one row, given its encoding."""
        digest = row_digest(key)
        self.digests.append(digest)
        if self.keep_all:
            self.previews.setdefault(digest, key[:PREVIEW_CHARS])
        elif self.expected is not None and digest not in self.expected:
            self._keep_small(digest, key[:PREVIEW_CHARS])

    def _keep_small(self, digest: str, preview: str) -> None:
        if digest in self.previews:
            return
        if len(self.previews) >= SAMPLES:
            largest = max(self.previews)
            if digest > largest:
                return
            del self.previews[largest]
        self.previews[digest] = preview


def table_rows(
    conn: Any, schema: str, name: str, cols: list[tuple[str, str]], rows: Rows
) -> int | None:
    """Read every row of a table (``FROM ONLY``) into ``rows``; its count, None if too many.

    One server-side cursor, `FETCH_ROWS` rows at a time, at most `MAX_TABLE_ROWS` + 1.
    """
    select = ", ".join(ident(c) for c, _ in cols)  # empty: rows without columns
    categories = [category for _, category in cols]
    seen = 0
    with conn.cursor(name="boxgym_rows") as cur:
        cur.itersize = FETCH_ROWS
        cur.execute(f"SELECT {select} FROM ONLY {ident(schema, name)} LIMIT {MAX_TABLE_ROWS + 1}")
        for row in cur:
            seen += 1
            if seen > MAX_TABLE_ROWS:
                return None
            rows.add(row_key([canon_text(c, v) for c, v in zip(categories, row, strict=True)]))
    return seen


def table_state(
    conn: Any,
    rel: dict[str, Any],
    cols: dict[str, Any],
    ignore: set[str],
    rows: Rows,
) -> dict[str, Any]:
    """Columns, options, row count and content hash of one table."""
    full = f"{rel['schema']}.{rel['name']}"
    names = (full, rel["name"])
    hashed = sorted(c for c in cols if not any(f"{n}.{c}" in ignore for n in names))
    count = None
    if rel["kind"] == "r":  # a partitioned table holds no rows of its own
        count = table_rows(
            conn, rel["schema"], rel["name"], [(c, cols[c]["category"]) for c in hashed], rows
        )
    else:
        count = 0
    public = {c: {k: v for k, v in spec.items() if k != "category"} for c, spec in cols.items()}
    return {
        "columns": public,
        "props": rel["props"],
        "hashed_columns": hashed,
        "count": count,
        "hash": table_hash(rows.digests) if count is not None else None,
        "too_large": count is None,
    }


def constraints(conn: Any) -> list[dict[str, Any]]:
    """Every constraint of a user table: table, name, type, definition, validated."""
    rows = query(
        conn,
        f"""SELECT n.nspname || '.' || c.relname, co.conname, co.contype,
                   {short("pg_get_constraintdef(co.oid)")}, co.convalidated
        FROM pg_constraint co
        JOIN pg_class c ON c.oid = co.conrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE {USER_SCHEMAS}
        ORDER BY 1, 2""",
    )
    return [
        {
            "table": t,
            "name": name,
            "type": typ,
            "def": d.removesuffix(" NOT VALID"),
            "validated": as_bool(v),
        }
        for t, name, typ, d, v in rows
    ]


def indexes(conn: Any) -> list[dict[str, Any]]:
    """Every index of a user table: its definition without its name, and whether it refuses.

    It refuses rows when it is unique, or an exclusion constraint's, or when it computes
    an expression or a predicate on each row: an error there refuses the row as a CHECK
    would (``(1 / (CASE WHEN quantity > 1000000 THEN 0 ELSE 1 END))`` passed as an index
    more that refuses nothing, found by a red-team helper). Whether an expression can
    raise is not decided: any one counts.
    """
    rows = query(
        conn,
        f"""SELECT n.nspname || '.' || t.relname, ic.relname,
                   replace({short("pg_get_indexdef(i.indexrelid)")},
                           ' ' || quote_ident(ic.relname) || ' ON ', ' ON '),
                   i.indisunique OR i.indisexclusion OR i.indexprs IS NOT NULL
                       OR i.indpred IS NOT NULL
        FROM pg_index i
        JOIN pg_class ic ON ic.oid = i.indexrelid
        JOIN pg_class t ON t.oid = i.indrelid
        JOIN pg_namespace n ON n.oid = t.relnamespace
        WHERE {USER_SCHEMAS}
        ORDER BY 1, 2""",
    )
    return [{"table": t, "name": name, "def": d, "refuses": as_bool(u)} for t, name, d, u in rows]


def triggers(conn: Any) -> list[dict[str, Any]]:
    """Every user trigger: definition without its name, and its enabled state."""
    rows = query(
        conn,
        f"""SELECT n.nspname || '.' || c.relname, tg.tgname,
                   replace({short("pg_get_triggerdef(tg.oid)")},
                           'TRIGGER ' || quote_ident(tg.tgname) || ' ', 'TRIGGER '),
                   tg.tgenabled
        FROM pg_trigger tg
        JOIN pg_class c ON c.oid = tg.tgrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE NOT tg.tgisinternal AND {USER_SCHEMAS}
        ORDER BY 1, 2""",
    )
    return [
        {"table": t, "name": name, "def": d, "enabled": str(enabled)}
        for t, name, d, enabled in rows
    ]


def functions(conn: Any) -> dict[str, str]:
    """Functions, procedures and aggregates of the user schemas: signature -> md5."""
    rows = query(
        conn,
        f"""SELECT n.nspname || '.' || p.proname
                   || '(' || pg_get_function_identity_arguments(p.oid) || ')',
                   CASE WHEN p.prokind IN ('f', 'p', 'w') THEN md5(pg_get_functiondef(p.oid))
                        ELSE p.prokind::text || ':' || md5(concat_ws(' ',
                             a.aggtransfn::regprocedure, a.aggfinalfn::regprocedure,
                             a.aggcombinefn::regprocedure, format_type(a.aggtranstype, NULL),
                             a.agginitval, a.aggkind)) END
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        LEFT JOIN pg_aggregate a ON a.aggfnoid = p.oid
        WHERE {USER_SCHEMAS}""",
    )
    return dict(rows)


def types(conn: Any) -> dict[str, str]:
    """Types of the user schemas made on their own (enums, domains, ranges, shells...).

    Row types of relations and the array types made with each type are left out: they
    come and go with what made them.
    """
    rows = query(
        conn,
        f"""SELECT n.nspname || '.' || t.typname,
                   t.typtype::text || ':' || {
            short('''CASE
                       WHEN t.typtype = 'e' THEN (SELECT string_agg(e.enumlabel, ',' ORDER BY
                                                  e.enumsortorder) FROM pg_enum e
                                                  WHERE e.enumtypid = t.oid)
                       WHEN t.typtype = 'd' THEN concat_ws(' ',
                           format_type(t.typbasetype, t.typtypmod),
                           CASE WHEN t.typcollation <> b.typcollation
                                THEN 'COLLATE ' || t.typcollation::regcollation::text END,
                           CASE WHEN t.typnotnull THEN 'NOT NULL' END,
                           'DEFAULT ' || t.typdefault,
                           (SELECT string_agg(pg_get_constraintdef(c.oid), ' ' ORDER BY
                                              c.conname) FROM pg_constraint c
                            WHERE c.contypid = t.oid))
                       WHEN t.typtype = 'r' THEN (SELECT concat_ws(' ',
                           format_type(r.rngsubtype, NULL), r.rngsubopc::text,
                           r.rngsubdiff::regprocedure) FROM pg_range r
                           WHERE r.rngtypid = t.oid)
                       ELSE t.typisdefined::text END''')
        }
        FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
        LEFT JOIN pg_type b ON b.oid = t.typbasetype
        WHERE t.typrelid = 0 AND NOT (t.typcategory = 'A' AND t.typelem <> 0)
          AND {USER_SCHEMAS}""",
    )
    return dict(rows)


_OWNING_COLUMN = """(SELECT format('%I.%I.%I', tn.nspname, t.relname, a.attname)
    FROM pg_depend d JOIN pg_class t ON t.oid = d.refobjid
    JOIN pg_namespace tn ON tn.oid = t.relnamespace
    JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = d.refobjsubid
    WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
      AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')
    ORDER BY 1 LIMIT 1)"""
"""The column a sequence belongs to (identity, serial, ``OWNED BY``): schema.table.column."""


def sequences(conn: Any) -> dict[str, dict[str, Any]]:
    """Every sequence of the user schemas: its definition, position and owning column.

    ``def``: type, start, increment, bounds, cache, cycle; ``last_value`` and
    ``is_called`` as the sequence holds them (read directly: no function called);
    ``owner``: the column it belongs to ('' for none). The host matches a column's
    sequence by its column, not by its name, which the table's owner may change.
    """
    rows = query(
        conn,
        f"""SELECT n.nspname, c.relname,
                   concat_ws(' ', format_type(s.seqtypid, NULL), 'start', s.seqstart,
                             'increment', s.seqincrement, 'min', s.seqmin, 'max', s.seqmax,
                             'cache', s.seqcache, CASE WHEN s.seqcycle THEN 'cycle' END),
                   s.seqincrement, coalesce({_OWNING_COLUMN}, '')
        FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE {USER_SCHEMAS}""",
    )
    if not rows:
        return {}
    positions = " UNION ALL ".join(
        f"SELECT {i}, last_value, is_called FROM {ident(nsp, name)}"
        for i, (nsp, name, *_) in enumerate(rows)
    )
    state = {int(i): (last, called) for i, last, called in query(conn, positions)}
    out = {}
    for i, (nsp, name, definition, increment, owner) in enumerate(rows):
        last, called = state[i]
        out[f"{nsp}.{name}"] = {
            "def": definition,
            "increment": as_int(increment),
            "last_value": as_int(last),
            "is_called": as_bool(called),
            "owner": owner,
        }
    return out


def large_objects(conn: Any) -> dict[str, str]:
    """Every large object: oid -> size and md5 of its content."""
    rows = query(
        conn,
        """SELECT m.oid::text,
                  coalesce((SELECT sum(length(p.data)) FROM pg_largeobject p
                            WHERE p.loid = m.oid), 0)::text || ':'
                  || md5(coalesce((SELECT string_agg(p.data, ''::bytea ORDER BY p.pageno)
                                   FROM pg_largeobject p WHERE p.loid = m.oid), ''::bytea))
        FROM pg_largeobject_metadata m""",
    )
    return dict(rows)


_OTHERS = f"""
SELECT 'schema', n.nspname::text, '' FROM pg_namespace n WHERE {USER_SCHEMAS}
UNION ALL
SELECT 'extension', e.extname::text, e.extversion || ' ' || n.nspname
FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
UNION ALL
SELECT 'rule', n.nspname || '.' || c.relname || ' ' || r.rulename, {short("pg_get_ruledef(r.oid)")}
FROM pg_rewrite r JOIN pg_class c ON c.oid = r.ev_class
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE r.rulename <> '_RETURN' AND {USER_SCHEMAS}
UNION ALL
SELECT 'policy', n.nspname || '.' || c.relname || ' ' || p.polname,
       {
    short('''concat_ws(' ', p.polcmd, p.polpermissive,
                 (SELECT string_agg(CASE WHEN r = 0 THEN 'public'
                                         ELSE (SELECT rolname FROM pg_authid WHERE oid = r)
                                    END, ',' ORDER BY r) FROM unnest(p.polroles) AS r),
                 pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid))''')
}
FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid
JOIN pg_namespace n ON n.oid = c.relnamespace WHERE {USER_SCHEMAS}
UNION ALL
SELECT 'operator', o.oid::regoperator::text,
       concat_ws(' ', o.oprcode::regprocedure, o.oprkind, o.oprcom::regoperator,
                 o.oprnegate::regoperator, o.oprrest::regprocedure, o.oprjoin::regprocedure,
                 o.oprcanmerge, o.oprcanhash)
FROM pg_operator o WHERE o.oid >= {FIRST_USER_OID}
UNION ALL
SELECT 'cast', format_type(c.castsource, NULL) || ' AS ' || format_type(c.casttarget, NULL),
       concat_ws(' ', c.castfunc::regprocedure, c.castcontext, c.castmethod)
FROM pg_cast c WHERE c.oid >= {FIRST_USER_OID}
UNION ALL
SELECT 'collation', n.nspname || '.' || c.collname,
       concat_ws(' ', c.collprovider, c.collisdeterministic, c.collcollate, c.collctype,
                 c.colliculocale)
FROM pg_collation c JOIN pg_namespace n ON n.oid = c.collnamespace
WHERE c.oid >= {FIRST_USER_OID}
UNION ALL
SELECT 'text search configuration', c.oid::regconfig::text,
       {
    short('''c.cfgparser::regproc::text || ' ' || coalesce((SELECT string_agg(
           m.maptokentype || ':' || m.mapseqno || ':' || m.mapdict::regdictionary, ','
           ORDER BY m.maptokentype, m.mapseqno) FROM pg_ts_config_map m
           WHERE m.mapcfg = c.oid), '')''')
}
FROM pg_ts_config c WHERE c.oid >= {FIRST_USER_OID}
UNION ALL
SELECT 'text search dictionary', d.oid::regdictionary::text,
       {short("d.dicttemplate::text || ' ' || coalesce(d.dictinitoption, '')")}
FROM pg_ts_dict d WHERE d.oid >= {FIRST_USER_OID}
UNION ALL
SELECT 'statistics', n.nspname || '.' || s.stxname, {short("pg_get_statisticsobjdef(s.oid)")}
FROM pg_statistic_ext s JOIN pg_namespace n ON n.oid = s.stxnamespace
WHERE s.oid >= {FIRST_USER_OID}
UNION ALL
SELECT 'comment', (pg_identify_object(d.classoid, d.objoid, d.objsubid)).identity,
       md5(d.description)
FROM pg_description d WHERE d.objoid >= {FIRST_USER_OID}
UNION ALL
SELECT k.kind, (pg_identify_object(k.classid, k.objid, 0)).identity, ''
FROM (SELECT 'conversion' AS kind, 'pg_conversion'::regclass AS classid, oid AS objid
        FROM pg_conversion
      UNION ALL SELECT 'language', 'pg_language'::regclass, oid FROM pg_language
      UNION ALL SELECT 'access method', 'pg_am'::regclass, oid FROM pg_am
      UNION ALL SELECT 'operator class', 'pg_opclass'::regclass, oid FROM pg_opclass
      UNION ALL SELECT 'operator family', 'pg_opfamily'::regclass, oid FROM pg_opfamily
      UNION ALL SELECT 'event trigger', 'pg_event_trigger'::regclass, oid FROM pg_event_trigger
      UNION ALL SELECT 'foreign-data wrapper', 'pg_foreign_data_wrapper'::regclass, oid
        FROM pg_foreign_data_wrapper
      UNION ALL SELECT 'server', 'pg_foreign_server'::regclass, oid FROM pg_foreign_server
      UNION ALL SELECT 'user mapping', 'pg_user_mapping'::regclass, oid FROM pg_user_mapping
      UNION ALL SELECT 'publication', 'pg_publication'::regclass, oid FROM pg_publication
      UNION ALL SELECT 'transform', 'pg_transform'::regclass, oid FROM pg_transform) AS k
WHERE k.objid >= {FIRST_USER_OID}
"""


def other_objects(conn: Any) -> dict[str, str]:
    """Every other object a database holds: ``kind name`` -> its definition."""
    return {f"{kind} {name}": definition or "" for kind, name, definition in query(conn, _OTHERS)}


def snapshot(
    db: str,
    ignore: set[str],
    keep: set[str],
    expected: dict[str, list[str]] | None = None,
    *,
    bounded: bool = False,
) -> tuple[dict[str, Any], dict[str, Rows]]:
    """The state of one database, and the rows of the tables named in ``keep``.

    ``expected``: for the tables in ``keep``, the digests of the rows expected there;
    given, only the previews of a few unexpected rows are kept (a diff's samples);
    absent, every row's preview is (the gold state, cached by the host).
    ``bounded``: first count the objects (`census`) and raise `Bound` past `LIMITS`.
    """
    conn = catalog(db)
    try:
        if bounded:
            over = over_limits(census(conn))
            if over:
                raise Bound("the final state holds " + "; ".join(over))
        rels = relations(conn)
        cols = all_columns(conn)
        tables, kept = {}, {}
        for full, rel in sorted(rels.items()):
            if rel["kind"] in ("r", "p"):
                want = set(expected[full]) if expected and full in expected else None
                rows = Rows(keep_all=full in keep and expected is None, expected=want)
                tables[full] = table_state(conn, rel, cols.get(rel["oid"], {}), ignore, rows)
                if full in keep:
                    kept[full] = rows
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
            "sequences": sequences(conn),
            "large_objects": large_objects(conn),
            "others": other_objects(conn),
        }
        return snap, kept
    finally:
        conn.rollback()
        conn.close()


def roles() -> dict[str, Any]:
    """The roles of this server (`ROLES_SQL`), read as a superuser."""
    conn = catalog("postgres")
    try:
        ((raw,),) = query(conn, ROLES_SQL)
        data: dict[str, Any] = json.loads(raw)
        return data
    finally:
        conn.rollback()
        conn.close()


def row_diffs(
    kept: dict[str, Rows], expected: dict[str, list[str]], final_tables: dict[str, Any]
) -> dict[str, Any]:
    """Per kept table whose rows differ from ``expected``: counts and a few samples."""
    diffs = {}
    for table, rows in sorted(kept.items()):
        want = expected.get(table)
        if want is None or final_tables[table]["too_large"]:
            continue
        missing = Counter(want) - Counter(rows.digests)
        extra = Counter(rows.digests) - Counter(want)
        if not missing and not extra:
            continue
        previews = rows.previews
        extra_sample = sorted(extra)[:SAMPLES]
        diffs[table] = {
            "missing": sum(missing.values()),
            "extra": sum(extra.values()),
            "missing_sample": sorted(missing)[:SAMPLES],
            "extra_sample": extra_sample,
            "previews": {d: previews[d] for d in extra_sample if d in previews},
        }
    return diffs


# -- the task's own database -------------------------------------------------------------

LOAD_HEAD = r"""\set ON_ERROR_STOP 1
BEGIN;
DROP SCHEMA IF EXISTS shop CASCADE;
GRANT USAGE, CREATE ON SCHEMA public TO shop_owner;
DO $boxgym$ BEGIN
  EXECUTE pg_catalog.format('GRANT CREATE ON DATABASE %I TO shop_owner',
                            pg_catalog.current_database());
END $boxgym$;
SET ROLE shop_owner;
SET search_path = public;
"""
"""Before a task's own database (psql, as the server's superuser, in database ``shop`` or
``gold``): the bundled ``shop`` schema goes, and the dump then runs as ``shop_owner``
(who owns what it creates, as it owns the bundled schema: the agent role can change
rows but never drop or alter what it does not own), in one transaction."""

LOAD_TAIL = r"""
RESET ROLE;
SET search_path = pg_catalog;
DO $boxgym$
DECLARE s record;
BEGIN
  EXECUTE pg_catalog.format('REVOKE CREATE ON DATABASE %I FROM shop_owner',
                            pg_catalog.current_database());
  FOR s IN SELECT n.nspname FROM pg_catalog.pg_namespace n
           WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
             AND n.nspname NOT LIKE 'pg\_%' ORDER BY 1
  LOOP
    EXECUTE pg_catalog.format('GRANT USAGE, CREATE ON SCHEMA %I TO agent', s.nspname);
    EXECUTE pg_catalog.format('GRANT SELECT, INSERT, UPDATE, DELETE, REFERENCES '
                              'ON ALL TABLES IN SCHEMA %I TO agent', s.nspname);
    EXECUTE pg_catalog.format('GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES '
                              'IN SCHEMA %I TO agent', s.nspname);
    EXECUTE pg_catalog.format('GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA %I TO agent',
                              s.nspname);
  END LOOP;
END $boxgym$;
COMMIT;
"""
"""After the dump: the agent role gets what grants.sql gives it in the bundled database
(read and change the rows of every table, create its own objects), in every schema."""


def load_script(dump: bytes) -> bytes:
    """What psql reads to load a task's own database (`LOAD_HEAD`, the dump, `LOAD_TAIL`)."""
    return LOAD_HEAD.encode() + dump + b"\n" + LOAD_TAIL.encode()


def load_database(db: str, dump_path: str) -> None:
    """Load the task's own database into ``db`` (``shop`` or ``gold``), as at reset.

    As the agent's container did it. The dump is the task's, never the agent's: a failure
    is a crash (the host makes it ``infra_error``).
    """
    with open(dump_path, "rb") as f:
        script = load_script(f.read())
    proc = subprocess.run(
        [f"{PG_BIN}/psql", "-X", "-q", "-h", SOCKET, "-d", db, "-f", "-"],
        input=script,
        capture_output=True,
        timeout=RESTORE_SECONDS,
        env={
            "PATH": "/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "PGOPTIONS": "-c client_min_messages=warning",
        },
    )
    if proc.returncode != 0:
        tail = proc.stderr[-1500:].decode("utf-8", "replace").strip()
        raise RuntimeError(f"the task's database did not load into {db}: {tail}")


def open_final_schema() -> None:
    """Let the agent role create objects in ``final``'s public schema.

    A task's own database lives there, and the agent's final state is restored as itself.
    """
    conn = connect("final", search_path="pg_catalog")
    try:
        query_none(conn, "GRANT USAGE, CREATE ON SCHEMA public TO agent")
    finally:
        conn.close()


# -- the steps -----------------------------------------------------------------------------


def query_none(conn: Any, sql: str) -> None:
    """Run statements whose result is not needed."""
    with conn.cursor() as cur:
        cur.execute(sql)


def error_text(exc: BaseException) -> str:
    """The server's message of an error (the end of it, when long). For reading only."""
    text = getattr(exc, "pgerror", None) or str(exc) or type(exc).__name__
    return text.strip()[-2000:]


AGENT_SETTINGS = """SELECT pg_catalog.split_part(u.c, '=', 1),
       pg_catalog.substr(u.c, pg_catalog.strpos(u.c, '=') + 1)
FROM pg_catalog.pg_db_role_setting s
CROSS JOIN LATERAL pg_catalog.unnest(s.setconfig) WITH ORDINALITY AS u(c, i)
WHERE s.setrole = (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = 'agent')
  AND s.setdatabase IN (0, (SELECT d.oid FROM pg_catalog.pg_database d
                            WHERE d.datname = pg_catalog.current_database()))
ORDER BY s.setdatabase <> 0, u.i"""
"""The agent role's own settings (``ALTER ROLE agent [IN DATABASE] SET``) in the current
database, in the order a login applies them (the database's own last, so it wins)."""


def gold_session(db: str, **settings: str) -> Any:
    """A connection that runs the gold SQL as the agent role, under another login.

    The server's superuser logs in and becomes the agent role (``SET SESSION
    AUTHORIZATION``: the agent's privileges, ownerships and role settings, ``settings``
    overriding those as at login). The server lists a session under the role it logged
    in as and shows its query text only to that role (and to pg_read_all_stats, which
    the agent role lacks): whatever the gold runs stays hidden from the agent role's
    sessions, even while it runs (`forget_gold`).
    """
    conn = connect(db, **settings)
    try:
        with conn.cursor() as cur:
            cur.execute(AGENT_SETTINGS)
            for name, value in cur.fetchall():
                if name.lower() not in {k.lower() for k in settings}:
                    cur.execute("SELECT pg_catalog.set_config(%s, %s, false)", (name, value))
            cur.execute("SET SESSION AUTHORIZATION agent")
    except BaseException:
        conn.close()
        raise
    return conn


FORGET_SECONDS = 30.0
"""The most time the gold's server session may take to end once its client has left."""


def forget_gold() -> None:
    """Leave nothing of the gold query's run for the agent's answer query to read.

    Waits until no other client session of the server is left (the gold's ends just
    after its client closes it), then zeroes the statistics counters of ``shop`` (how
    often, and how many rows, the gold read from each table). With `gold_session`, the
    agent role never sees the gold's query text; afterwards, nothing of its session.

    Raises:
        RuntimeError: a session still runs after `FORGET_SECONDS` (a fault of the runner's
            or of the server: the runner opened every session there is).
    """
    conn = connect("shop", search_path="pg_catalog")
    try:
        deadline = time.monotonic() + FORGET_SECONDS
        while True:
            ((left,),) = query(
                conn,
                "SELECT pg_catalog.count(*) FROM pg_catalog.pg_stat_activity "
                "WHERE backend_type = 'client backend' AND pid <> pg_catalog.pg_backend_pid()",
            )
            if not left:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{left} server sessions still run after the gold query")
            time.sleep(0.01)
        query(conn, "SELECT pg_catalog.pg_stat_reset()")
    finally:
        conn.close()


def run_gold_write(spec: dict[str, Any]) -> str | None:
    """Replay the gold SQL in ``gold`` (a pristine copy); the error text if it failed."""
    admin = connect("gold")
    try:
        for table in spec.get("owns", []):
            query_none(
                admin, f"ALTER TABLE {ident(spec.get('schema', 'shop'), table)} OWNER TO agent"
            )
    finally:
        admin.close()
    conn = gold_session("gold", statement_timeout=f"{int(spec['timeout'] * 1000)}")
    try:
        query_none(conn, spec["gold"])
    except Exception as exc:  # noqa: BLE001 - reported, never raised
        return error_text(exc)
    finally:
        conn.close()
    return None


LOCK_FUNCTIONS = f"""DO $$
DECLARE f record;
BEGIN
  FOR f IN SELECT CASE p.prokind WHEN 'p' THEN 'PROCEDURE' ELSE 'FUNCTION' END AS kind,
                  format('%I.%I(%s)', n.nspname, p.proname,
                         pg_get_function_identity_arguments(p.oid)) AS sig
           FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
           WHERE {USER_SCHEMAS}
             AND p.prorettype NOT IN ('trigger'::regtype, 'event_trigger'::regtype)
  LOOP
    EXECUTE format('REVOKE EXECUTE ON %s %s FROM PUBLIC, agent', f.kind, f.sig);
  END LOOP;
END $$"""
"""Take EXECUTE away from every function of the restored definitions (run as the
superuser, between the two steps of the restore). Trigger functions keep it: CREATE
TRIGGER needs it, and a trigger function cannot be called, only fire on a later write.
Each routine is named as pg_dump names it in a GRANT: its kind and its identity
arguments (a procedure's OUT ones among them), so a function and a procedure of one
name and printed signature are never one ambiguous ROUTINE."""


_MATVIEW_DATA = re.compile(rb"^\d+; \d+ \d+ MATERIALIZED VIEW DATA ")
"""A line of `pg_restore -l` that refreshes a materialized view: its fields are fixed up
to the entry's kind, and the names that follow are written with their line breaks
escaped, so no name of the agent's can make or hide such a line."""


def restore_list(dump_path: str) -> str:
    """The dump's table of contents less every materialized view's data (a list file).

    A refresh runs the view's query, the agent's code: built-in functions with effects
    (``setval``, ``lo_unlink``...) would change the state being graded, and a query
    over ``generate_series`` would write gigabytes from a dump of kilobytes. The views
    stay (their definitions are graded), empty; the snapshot never reads their rows.
    """
    proc = subprocess.run(
        [f"{PG_BIN}/pg_restore", "-l", dump_path],
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        capture_output=True,
        timeout=RESTORE_SECONDS,
        check=True,
    )
    kept = [line for line in proc.stdout.split(b"\n") if not _MATVIEW_DATA.match(line)]
    path = os.path.join(tempfile.mkdtemp(prefix="restore-"), "restore.list")
    with open(path, "wb") as fh:
        fh.write(b"\n".join(kept))
    return path


def restore_final(dump_path: str, timeout: float, *, split: bool = True) -> str | None:
    """Load the agent's final state into ``final`` (empty) as the agent role; error or None.

    ``split``: in two steps, the functions locked between them (`LOCK_FUNCTIONS`). The
    host asks for one step only when the export's census, taken once the agent's
    sessions had all ended, found no function that could be called: then no code of
    the agent's can run while the state loads either way.

    Every failure is the agent's (the caller reports it as such): its dump does not
    load, or loads too slowly. No text of the failure is read to decide anything.
    """
    env = {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "PGOPTIONS": f"-c statement_timeout={int(timeout * 1000)}",
    }
    base = [
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
    ]
    import psycopg2

    deadline = time.monotonic() + RESTORE_SECONDS
    try:
        listed = restore_list(dump_path)
    except (subprocess.SubprocessError, OSError):
        return "the final state's dump could not be read (pg_restore -l failed)"
    base += ["-L", listed]
    steps = (["--section=pre-data"], ["--section=data", "--section=post-data"]) if split else ([],)
    for i, sections in enumerate(steps):
        if i:
            try:
                conn = connect("final", search_path="pg_catalog")
                try:
                    query_none(conn, LOCK_FUNCTIONS)
                finally:
                    conn.close()
            except psycopg2.Error as exc:  # on the agent's routines: its state, not ours
                return f"the final state's routines could not be locked: {error_text(exc)}"
        left = deadline - time.monotonic()
        try:
            proc = subprocess.run(
                [*base, *sections, dump_path],
                env=env,
                capture_output=True,
                timeout=max(left, 1.0),
            )
        except subprocess.TimeoutExpired:
            return f"restoring the final state took more than {RESTORE_SECONDS:.0f} s"
        if proc.returncode != 0:
            raw = proc.stderr or proc.stdout or b""
            text = raw[-2000:].decode("utf-8", "replace").strip()
            return text or f"pg_restore exited with status {proc.returncode}"
    return None


def changed_on_restore(left: dict[str, int]) -> str | None:
    """Why the restored ``final`` is not the state the agent left (None: it is).

    ``left`` is `STATE_PARTS` as the export's census read it in the agent's database,
    once its sessions had ended. The restore runs expressions of the agent's: a CHECK
    validated as a constraint is added, a domain's as a row loads. Its own functions are
    locked by then (`LOCK_FUNCTIONS`), but built-in ones with effects (``setval``,
    ``lo_unlink``) are not: a state that changes as it is restored cannot be graded as
    left, and that is the agent's doing.
    """
    if not left:
        return None
    wait = f"{int(CHANGED_SECONDS * 1000)}"
    conn = connect("final", search_path="pg_catalog", statement_timeout=wait)
    try:
        ((raw,),) = query(conn, STATE_SQL + "::text")
    finally:
        conn.close()
    now = json.loads(raw)
    moved = [k.split("_state")[0].replace("_", " ") for k in left if now.get(k) != left[k]]
    if not moved:
        return None
    return (
        f"the final state's {' and '.join(moved)} changed as it was restored: an expression "
        "of the agent's (a constraint, a domain) ran a function with effects, so the "
        "state it left cannot be graded"
    )


def data_mb() -> int:
    """MiB the server's data folder takes on disk (its files' allocated blocks)."""
    total = 0
    for root, _, files in os.walk(PGDATA):
        for name in files:
            with contextlib.suppress(OSError):  # a file the server removed meanwhile
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total >> 20


def disk_free_mb() -> int:
    """Free space (MiB) of the server's file system: the kernel's measure, not a message."""
    try:
        st = os.statvfs(PGDATA)
    except OSError:
        return -1
    return (st.f_bavail * st.f_frsize) >> 20


def read_final(spec: dict[str, Any], expected: dict[str, list[str]]) -> dict[str, Any]:
    """Bound and snapshot ``final`` in a capped child process: the final part of a report.

    The part holds ``final`` and ``row_diffs``, or ``final_error`` (the agent's: an
    object over a bound, a value that cannot be held, a server that stops answering,
    a snapshot that takes too long). A bug of the runner (any other exception) comes
    back as ``crash``.
    """
    import multiprocessing

    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_final_child, args=(spec, expected, send), daemon=True)
    child.start()
    send.close()
    result = None
    try:
        if receive.poll(FINAL_SECONDS):
            result = receive.recv()
    except (EOFError, OSError, MemoryError):
        result = None
    finally:
        child.join(5)
        if child.is_alive():
            child.kill()
            child.join()
    if result is None:
        return {
            "final_error": "the final state could not be read within "
            f"{FINAL_SECONDS:.0f} s and {FINAL_MEMORY >> 20} MiB of memory"
        }
    return dict(result)


def _final_child(spec: dict[str, Any], expected: dict[str, list[str]], send: Any) -> None:
    import resource

    import psycopg2

    resource.setrlimit(resource.RLIMIT_AS, (FINAL_MEMORY, FINAL_MEMORY))
    try:
        result = _read_final(spec, expected)
    except Bound as exc:
        result = {"final_error": str(exc)}
    except MemoryError:
        result = {"final_error": f"the final state does not fit in {FINAL_MEMORY >> 20} MiB"}
    except psycopg2.Error as exc:
        result = {"final_error": "the final state could not be read: " + error_text(exc)}
    except BaseException:  # noqa: BLE001 - a bug of the runner: reported as a crash
        import traceback

        result = {"crash": traceback.format_exc()[-3000:]}
    send.send(result)


def _read_final(spec: dict[str, Any], expected: dict[str, list[str]]) -> dict[str, Any]:
    ignore = set(spec.get("ignore_columns", []))
    scope = set(spec.get("scope", []))
    final, kept = snapshot("final", ignore, scope, expected, bounded=True)
    return {"final": final, "row_diffs": row_diffs(kept, expected, final["tables"])}


def answer(sql: str, timeout: float, *, gold: bool = False) -> dict[str, Any]:
    """Run a query on the pristine database as the agent role, read-only; canonical rows.

    The query runs in a child process whose address space is capped: a result too
    large to hold (one huge value, or many rows) is an error of the answer, never a
    runner that dies without a report. ``gold``: the task's gold query, run in a session
    of the server's superuser that has become the agent role (`gold_session`).
    """
    if not sql.strip():
        return {"error": "no answer query was submitted", "columns": [], "rows": []}
    import multiprocessing

    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_answer_child, args=(sql, timeout, gold, send), daemon=True)
    child.start()
    send.close()
    result, late = None, False
    try:
        # This poll is the answer's real time bound: the session's statement_timeout is
        # not one (a query can run `SET statement_timeout = 0` itself). A child that has
        # not answered by then ran too long (it is killed); one that died (EOF) without
        # answering ran out of memory.
        if receive.poll(timeout + 30):
            result = receive.recv()
        else:
            late = True
    except (EOFError, OSError, MemoryError):
        result = None
    finally:
        child.join(5)
        if child.is_alive():
            child.kill()
            child.join()
    if result is None and late:
        return _too_slow(timeout)
    return result or _too_large()


def _too_slow(timeout: float) -> dict[str, Any]:
    error = f"the answer query did not finish within its time limit ({timeout:g} s)"
    return {"error": error, "columns": [], "rows": []}


def _too_large() -> dict[str, Any]:
    limit = ANSWER_MEMORY >> 20
    error = f"the answer query's result does not fit in {limit} MiB of memory"
    return {"error": error, "columns": [], "rows": []}


def _answer_child(sql: str, timeout: float, gold: bool, send: Any) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (ANSWER_MEMORY, ANSWER_MEMORY))
    try:
        result = _run_answer(sql, timeout, gold)
    except MemoryError:
        result = _too_large()
    except BaseException as exc:  # noqa: BLE001 - an answer's failure is a result, not a crash
        result = {"error": error_text(exc), "columns": [], "rows": []}
    send.send(result)


def _run_answer(sql: str, timeout: float, gold: bool) -> dict[str, Any]:
    settings = {
        "statement_timeout": f"{int(timeout * 1000)}",
        "default_transaction_read_only": "on",
        "TimeZone": "UTC",
        "DateStyle": "ISO",
        "IntervalStyle": "postgres",
    }
    conn = gold_session("shop", **settings) if gold else connect("shop", "agent", **settings)
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
            names = [str(d.name)[:200] for d in cur.description]
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


def _gold_rows(kept: dict[str, Rows]) -> dict[str, list[list[str]]]:
    """The gold rows of the tables in scope, as [digest, preview] pairs (for the cache)."""
    return {t: [[d, rows.previews.get(d, "")] for d in rows.digests] for t, rows in kept.items()}


def grade(spec: dict[str, Any]) -> dict[str, Any]:
    """Every step in order; the agent's answer query runs last, after all state was read.

    The host caches the pristine and gold snapshots (they depend only on the image and
    the task) and asks for them only when it has none: ``want_pristine``, ``want_gold``
    (then it sends ``expected_rows``, the gold row digests of the tables in scope).
    """
    report: dict[str, Any] = {"runner": "boxgym-sql-runner", "version": RUNNER_VERSION}
    clock = Clock()
    report["timings"] = clock.laps
    ignore = set(spec.get("ignore_columns", []))
    scope = set(spec.get("scope", []))
    expected: dict[str, list[str]] = dict(spec.get("expected_rows", {}))
    if spec.get("database_path"):  # the task's own database, loaded as at reset
        load_database("shop", spec["database_path"])
        if spec.get("want_gold"):
            load_database("gold", spec["database_path"])
        open_final_schema()
        clock.lap("load_database")
    if spec.get("want_pristine"):
        report["pristine"], _ = snapshot("shop", ignore, set())
        report["pristine"]["roles"] = roles()
        clock.lap("snapshot_pristine")
    if spec.get("want_gold"):
        report["gold_error"] = run_gold_write(spec)
        clock.lap("gold")
        if report["gold_error"]:
            return report
        report["gold"], kept = snapshot("gold", ignore, scope)
        report["gold_rows"] = _gold_rows(kept)
        expected = {t: [d for d, _ in rows] for t, rows in report["gold_rows"].items()}
        clock.lap("snapshot_gold")
    import psycopg2

    before, kills = data_mb(), memory_kills()
    try:
        report.update(final_part(spec, expected, clock))
    except psycopg2.Error as exc:  # the server, loading or reading the agent's state
        report["final_error"] = "the final state could not be read: " + error_text(exc)
    if report.get("final_error") is not None:
        report.update(disk(before), host_oom=kills.by_the_host())
        return report
    if spec["kind"] == "read":
        report["gold_answer"] = answer(spec["gold"], spec["timeout"], gold=True)
        report["gold_error"] = report["gold_answer"]["error"]
        forget_gold()
        report["answer"] = answer(spec.get("answer", ""), spec["timeout"])
        clock.lap("answers")
        if report["answer"].get("error"):
            report.update(disk(before), host_oom=kills.by_the_host())
    return report


def memory_kills() -> Any:
    """The kernel's kills for want of memory in this container from now on.

    ``boxgym_memory.Kills``, shipped beside this script: ``by_the_host()`` says why a
    kill was the host's (the container below its own limit), None otherwise.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    from boxgym_memory import Kills

    return Kills()


def disk(before: int) -> dict[str, int]:
    """The disk after an error of the agent's state or answer: the host's measures of it.

    ``disk_free_mb``: the free space of the server's file system; ``restore_wrote_mb``:
    what the data folder grew by since ``before`` (MiB, before the restore), the agent's
    state. A query's temporary files are gone once it failed, so with the state's growth
    added back the free space is what the host had without the agent.
    """
    return {"disk_free_mb": disk_free_mb(), "restore_wrote_mb": data_mb() - before}


def final_part(
    spec: dict[str, Any], expected: dict[str, list[str]], clock: Clock
) -> dict[str, Any]:
    """Steps 4 and 5: the agent's final state restored into ``final``, checked and read.

    The part holds ``final`` and ``row_diffs``, or ``final_error`` (with
    ``restore_failed`` when the restore failed).
    """
    split = not spec.get("nothing_callable", False)
    error = restore_final(spec["dump_path"], spec["timeout"], split=split)
    clock.lap("restore")
    if error is not None:
        return {"final_error": error, "restore_failed": True}
    error = changed_on_restore(spec.get("restored_state") or {})
    if error is not None:
        return {"final_error": error}
    part = read_final(spec, expected)
    if part.get("crash"):
        raise RuntimeError(f"reading the final state failed: {part['crash']}")
    clock.lap("snapshot_final")
    return part


def encode(report: dict[str, Any]) -> str:
    """The report as JSON, never past `MAX_REPORT_BYTES` because of the agent's parts.

    If it would be, the final state's description and the answer give way to an error
    of the agent's (what is left is the runner's own, bounded, data).
    """
    text = json.dumps(report, sort_keys=True)
    if len(text) <= MAX_REPORT_BYTES:
        return text
    for key in ("final", "row_diffs", "answer"):
        report.pop(key, None)
    report["final_error"] = (
        f"the description of the final state or the answer is larger than "
        f"{MAX_REPORT_BYTES >> 20} MiB"
    )
    return json.dumps(report, sort_keys=True)


def main(argv: list[str]) -> int:
    """Grade the spec and write the report atomically; a crash is reported, not raised."""
    spec_path, out_path = argv
    os.makedirs(os.path.dirname(out_path), mode=0o700, exist_ok=False)
    with open(spec_path) as f:
        spec = json.load(f)
    try:
        text = encode(grade(spec))
    except Exception as exc:  # noqa: BLE001 - the host turns this into infra_error
        import traceback

        text = json.dumps(
            {
                "runner": "boxgym-sql-runner",
                "version": RUNNER_VERSION,
                "crash": traceback.format_exc()[-3000:],
                "error": error_text(exc),
            }
        )
    tmp = out_path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, out_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
