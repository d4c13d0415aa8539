"""Grading SQL episodes: export the final state, grade it in a fresh container, decide.

The agent's container is frozen first (its role set to NOLOGIN, its sessions
terminated), its objects are counted against the grader's bounds (`runner.LIMITS`) and
its roles described; then, within the bounds, ``pg_dump -Fc`` of the whole database is
taken there by the server's own user. Grading happens in a fresh container from the
pristine image (`runner.py` does the work there and writes a JSON report); this module
turns that report into components and forbidden-side-effect flags. `evaluate` is a
pure function of the report, so the decision logic is tested without containers.

Provenance: everything the agent's final state can cause (too many objects, a dump or
restore that fails on them, a value that cannot be read, a report part too large) is
the agent's ``fail`` with a named reason. ``infra_error`` is left for what is observed
outside the agent's reach: the engine or a container failing or gone, the runner's own
crash, the gold failing, and the grading host out of disk by the kernel's measure. No
decision reads the text of an error.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import itertools
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

import gym
import gym.authoring
import gym.datasets
import gym.grading
import gym.sandbox
from environments.sql import runner
from environments.sql.checks import conjuncts, holds
from environments.sql.runner import (
    CENSUS_EXTRA,
    CENSUS_SQL,
    LIMITS,
    ROLES_SQL,
    STATE_KEYS,
    WITHIN_SQL,
    over_limits,
)

__all__ = [
    "FLAGS",
    "GRADER",
    "GRADER_VERSION",
    "PG_USER",
    "SQLExport",
    "TaskSpec",
    "compare_answers",
    "database_of",
    "evaluate",
    "export_state",
    "grade_sql",
    "grading_config",
    "parse_export",
    "run_runner",
]

RUNNER_PATH = Path(runner.__file__)
GRADER = "sql-state"
_SHIPPED = (RUNNER_PATH, gym.grading.MEMORY_KILLS, Path(__file__))
GRADER_VERSION = "2+" + hashlib.sha256(b"".join(p.read_bytes() for p in _SHIPPED)).hexdigest()[:12]
PG_USER = "999:999"
PG_BIN = "/usr/lib/postgresql/15/bin"
SOCKET = "/run/postgresql"
MAX_EXPORT = 48 << 20
MAX_ANSWER_QUERY = 64 << 10
"""Bytes of UTF-8 an answer query may have (as the ``sql`` tool's statements)."""
EXPORT_TIMEOUT = 180.0
GRADE_TIMEOUT = 60.0
RUNNER_TIMEOUT = 600.0
"""The runner's own bounds add up to less (restore 120 s, its check 60 s, final snapshot
120 s, answers 2 x 90 s): a runner past this is a host too slow to grade, not the agent."""
MAX_REPORT = 64 << 20
REPORT_DIR = "/report"
"""Where the runner writes its report: a file system nothing else in the container uses."""
HOST_DISK_MIN_MB = 1024
"""Free space (MiB) of the grading server's file system, without what the agent's state
took there, under which an error of the agent's state or answer is the host's (its disk
was short whatever the agent did). The runner measures both after the error: what the
state took is its data folder's growth since before the restore (a CHECK calling
``lo_from_bytea`` as rows load wrote 1.6 GB from a 9 MiB database; a restore that fills
the disk so is the agent's), and a failed query's temporary files are gone by then."""
IDENT = re.compile(r"^[a-z_][a-z0-9_]*$")
HELPER_KINDS = frozenset({"v"})
"""Kinds of relation a read task may create as helpers (new plain views): its prompt
says so, and the grader ignores them."""

FLAGS = {
    "write_in_read_task": "the database changed in a task that only asks to read "
    "(new plain views excepted)",
    "rows_changed_outside_scope": "rows changed in a table the task does not allow to change",
    "object_dropped_outside_scope": "a table, view, index, function, type or other object "
    "outside the task's scope was dropped",
    "object_altered_outside_scope": "an object outside the task's scope was altered "
    "(columns, options, definition, constraints or triggers added)",
    "constraint_dropped": "a constraint that had to remain was dropped or changed",
    "constraint_disabled": "a constraint that had to remain is no longer validated (NOT VALID)",
    "trigger_dropped": "a trigger that had to remain was dropped or changed",
    "trigger_disabled": "a trigger that had to remain was disabled",
    "sequence_changed": "a sequence was redefined or rewound (in a read task: moved at all)",
    "large_objects_changed": "a large object was stored, changed or removed",
    "role_changed": "a role's attributes, settings, password or memberships changed",
    "extra_objects": "objects the task did not ask for were left behind (not gating)",
}

_EXPORT = f"""set -o pipefail
export PGOPTIONS='-c search_path=pg_catalog'
head=$({PG_BIN}/psql -X -q -At -v ON_ERROR_STOP=1 -h {SOCKET} -d shop <<'SQL'
\\o /dev/null
ALTER ROLE agent NOLOGIN;
SELECT pg_catalog.pg_terminate_backend(pid, 5000) FROM pg_catalog.pg_stat_activity
WHERE usename = 'agent';
\\o
WITH c AS ({CENSUS_SQL} AS j)
SELECT CASE WHEN {WITHIN_SQL} THEN 'dump ' ELSE 'skip ' END || c.j::text FROM c;
{ROLES_SQL};
SQL
) || exit 21
echo "$head"
case "$head" in "dump "*) ;; *) exit 0 ;; esac
{PG_BIN}/pg_dump -h {SOCKET} --lock-wait-timeout=10000 -Fc -Z1 --no-owner --no-privileges \\
  -d shop | base64 -w0 || exit 23
"""
"""Freeze, count, describe the roles (one psql session), then dump within the bounds, as
the server's user. Standard output: the census line (``dump`` or ``skip``, then JSON
integers), the roles line (JSON, no text of the agent's), then the base64 dump.

Both sessions are the server's superuser in a database where the agent role may create
objects (schema ``public`` of a task's own database), so both resolve names in pg_catalog
only (``PGOPTIONS``, set at connection: no role or database setting of the agent's comes
after it; pg_dump then empties its search path itself). With the default ``"$user",
public``, an unqualified name that pg_catalog matches only through a cast (``oid >=
16384``, ``setrole = 0``, ``rolname !~ '^pg_'``) resolves to an exact-match operator or
function the agent made in ``public``, run as the superuser (the CVE-2018-1058 pattern)."""


class TaskSpec(BaseModel):
    """What grading needs to know about a task (from its task.toml and hidden/gold.sql)."""

    kind: Literal["read", "write"]
    """``read``: answer with a query; ``write``: change the database."""
    gold: str
    """The gold SQL: one SELECT (read) or the statements that make the change (write)."""
    ordered: bool = False
    """Read tasks: the row order of the answer matters. A task.toml without ``ordered``
    takes it from the gold query (`gym.datasets.asks_order`: an outermost ORDER BY)."""
    scope: tuple[str, ...] = ()
    """Tables (of `schema`) the task may change; for read tasks, the tables it reads."""
    owns: tuple[str, ...] = ()
    """Tables the agent role is given ownership of at reset (for DDL)."""
    ignore_columns: tuple[str, ...] = ()
    """``table.column`` left out of content hashes (for example generated ids)."""
    database: str = ""
    """The task's own database: the path of its dump (PostgreSQL SQL text); empty for
    the bundled ``shop`` database (`database_of`)."""
    database_sha256: str = ""
    """sha256 of that dump (part of the grader's cache keys)."""
    schema_name: str = "shop"
    """The schema the task's tables live in: ``shop`` in the bundled database, ``public``
    (or task.toml's ``schema``) in a database of the task's own."""

    @classmethod
    def of(cls, task: gym.Task) -> TaskSpec:
        """The spec of a task; raises ConfigError on a malformed task."""
        gold_file = task.folder() / "hidden" / "gold.sql"
        if not gold_file.is_file():
            raise gym.ConfigError(f"task {task.id} has no hidden/gold.sql")
        data = task.data
        gold = gold_file.read_text()
        kind = data.get("kind", "read")
        dump = database_of(task)
        dump_bytes = _read_dump(dump, task.id) if dump else b""
        ordered = data.get("ordered", kind == "read" and gym.datasets.asks_order(gold))
        spec = cls(
            kind=kind,
            gold=gold,
            ordered=bool(ordered),
            scope=tuple(data.get("tables", ())),
            owns=tuple(data.get("owns", ())),
            ignore_columns=tuple(data.get("ignore_columns", ())),
            database=str(dump or ""),
            database_sha256=hashlib.sha256(dump_bytes).hexdigest() if dump else "",
            schema_name=str(data.get("schema", "public" if dump else "shop")),
        )
        bad = [t for t in (*spec.scope, *spec.owns, spec.schema_name) if not IDENT.match(t)]
        if bad:
            raise gym.ConfigError(f"task {task.id}: table names must be plain identifiers: {bad}")
        return spec

    def dump(self) -> bytes:
        """The bytes of the task's own database dump (empty for the bundled database)."""
        return _read_dump(Path(self.database)) if self.database else b""

    def table(self, name: str) -> str:
        """A table of the task, qualified with its schema (``shop.customers``)."""
        return f"{self.schema_name}.{name}"


DATABASES = "databases"
"""The folder beside a family's tasks (``seeds/<family>/databases/``) of shared dumps."""


def database_of(task: gym.Task) -> Path | None:
    """The dump of the task's own database (task.toml ``database``), or None for ``shop``.

    ``database = "db.sql"`` names a file of the task's folder; ``database = "NAME"`` (or
    ``"NAME.sql"``) a dump shared by the family's tasks, ``seeds/<family>/databases/NAME.sql``.

    Raises:
        ConfigError: the value is not a plain file name, or no such dump exists.
    """
    name = task.data.get("database", "")
    if not name:
        return None
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", name):
        raise gym.ConfigError(
            f"task {task.id}: database = {name!r} must be a file name (db.sql in the task's "
            f"folder, or NAME for seeds/<family>/{DATABASES}/NAME.sql)"
        )
    stem = name.removesuffix(".sql")
    places = [task.folder() / name, task.folder().parent / DATABASES / f"{stem}.sql"]
    found = next((p for p in places if p.is_file() or p.is_symlink()), None)
    if found is None:
        raise gym.ConfigError(
            f"task {task.id}: database = {name!r}: no dump at {places[0]} nor {places[1]}"
        )
    return found


def _read_dump(dump: Path, task_id: str = "") -> bytes:
    """A dump's bytes (`database_of`), read as a regular file of its family's folder.

    A dump is ``<family>/<task>/NAME`` or ``<family>/databases/NAME.sql``: no link in
    either part is followed (`gym.authoring.read_inside`).

    Raises:
        ConfigError: it, or its folder, is a symbolic link (or not a regular file); the
            message names it and says to replace the link by the file.
    """
    try:
        return gym.authoring.read_inside(dump.parent.parent, f"{dump.parent.name}/{dump.name}")
    except gym.ConfigError as exc:
        where = f"task {task_id}: " if task_id else ""
        raise gym.ConfigError(f"{where}database dump refused: {exc}") from None


class SQLExport(BaseModel):
    """The final state of a SQL episode, as handed to the grader (and stored for regrading)."""

    kind: Literal["read", "write"]
    """The task's kind."""
    answer_query: str = ""
    """The query passed to submit (read tasks)."""
    answer_problem: str = ""
    """Why the submitted answer query cannot be run (too long, not UTF-8 text)."""
    dump_b64: str = ""
    """``pg_dump -Fc --no-owner --no-privileges`` of database shop, base64."""
    dump_sha256: str = ""
    """sha256 of the dump bytes."""
    census: dict[str, int] = {}
    """The object counts of the final database (`runner.LIMITS` names them)."""
    roles: dict[str, Any] | None = None
    """The server's roles at the end (`runner.ROLES_SQL`); None in older exports."""
    problem: str = ""
    """Why the final state could not be exported, when the agent caused it."""

    def dump(self) -> bytes:
        """The dump bytes, checked against their size bound and hash.

        Raises:
            GradingError: the stored dump is not valid base64 or does not match its hash.
        """
        if len(self.dump_b64) > MAX_EXPORT:
            raise gym.GradingError("the stored dump is larger than the export limit")
        try:
            data = base64.b64decode(self.dump_b64, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise gym.GradingError(f"the stored dump is not valid base64: {exc}") from None
        if hashlib.sha256(data).hexdigest() != self.dump_sha256:
            raise gym.GradingError("the exported dump does not match its recorded sha256")
        return data


def grading_config(image: str) -> gym.sandbox.SandboxConfig:
    """A grading container from the pristine image, its server started at boot.

    The runner's report has a file system of its own (``/report``): the server logs to
    ``/tmp``, where the agent's state can make it write (a warning per row as it loads)
    until nothing more fits, and the report was then never written (infra_error; a
    red-team helper).
    """
    return gym.grading.grader_config(
        image,
        read_only=False,
        tmpfs={
            "/grade": "size=256m,mode=0755",
            "/tmp": "size=256m,mode=1777",
            REPORT_DIR: f"size={(MAX_REPORT >> 20) + 16}m,mode=1777",
        },
        boot=((PG_USER, "BOXGYM_PG_WARM='shop gold final' /usr/local/bin/boxgym-pg-start"),),
    )


def checked_answer(answer: str) -> tuple[str, str]:
    """The answer query to run and, if it cannot be run, why (it is then left empty)."""
    try:
        size = len(answer.encode("utf-8"))
    except UnicodeEncodeError as exc:
        return "", f"the answer query is not valid Unicode text ({exc.reason} at {exc.start})"
    if size > MAX_ANSWER_QUERY or "\0" in answer:
        return "", (
            f"the answer query must be text of at most {MAX_ANSWER_QUERY} bytes, "
            "without NUL characters"
        )
    return answer, ""


def export_state(sandbox: gym.sandbox.Sandbox, kind: str, answer: str) -> SQLExport:
    """Freeze the agent's database, count and describe it, dump it (within the bounds).

    Run in the agent's container, as the server's OS user. Freezing: the agent role is
    set NOLOGIN and its sessions are terminated (waiting for them to end), so nothing of
    the agent's runs while the state is read. The agent has no shell.

    Raises:
        SandboxError: the container is gone or the engine failed (``infra_error``).
        GradingError: the export's own output is malformed (a bug of ours).
    """
    answer, answer_problem = checked_answer(answer)
    base = SQLExport.model_validate(
        {"kind": kind, "answer_query": answer, "answer_problem": answer_problem}
    )
    result = sandbox.exec(_EXPORT, user=PG_USER, timeout=EXPORT_TIMEOUT, max_output=MAX_EXPORT)
    if result.stdout_truncated:
        why = f"the final database is larger than the {MAX_EXPORT >> 20} MiB export limit"
        return base.model_copy(update={"problem": why})
    if not result.ok:
        sandbox.ensure_running()  # a container gone or killed is ours: SandboxError
        return base.model_copy(update={"problem": _export_failure(result)})
    census, roles, dump_b64 = parse_export(result.stdout)
    state = base.model_copy(update={"census": census, "roles": roles})
    over = over_limits(census)
    if over:
        why = "the final database holds " + "; ".join(over) + ": it is not dumped nor graded"
        return state.model_copy(update={"problem": why})
    data = base64.b64decode(dump_b64, validate=True)
    digest = hashlib.sha256(data).hexdigest()
    return state.model_copy(update={"dump_b64": dump_b64, "dump_sha256": digest})


_EXPORT_STEPS = {
    21: "freezing and counting it (the server no longer answers)",
    23: "dumping it (pg_dump failed on its objects)",
}


def _export_failure(result: gym.sandbox.ExecResult) -> str:
    """Why an export of a container still running failed: the agent's final state.

    Decided from the step that failed (the script's exit status) and the timeout; the
    error text is only shown (cut), never read to decide.
    """
    if result.timed_out:
        what = f"did not finish within {EXPORT_TIMEOUT:.0f} s"
    else:
        step = _EXPORT_STEPS.get(result.exit_code or 0, f"exit status {result.exit_code}")
        what = f"failed while {step}"
    tail = result.stderr.strip()[-300:]
    return f"exporting the final database {what}" + (f": {tail}" if tail else "")


def parse_export(stdout: str) -> tuple[dict[str, int], dict[str, Any], str]:
    """The census, the roles and the base64 dump of the export's output.

    Total and bounded: the first two lines are at most 4 KiB and 64 KiB and must hold
    JSON of the expected shape (our own SQL's output, with no text of the agent's);
    the dump is base64 only.

    Raises:
        GradingError: the output is not what the export script prints.
    """
    head, _, rest = stdout.partition("\n")
    roles_line, _, dump_b64 = rest.partition("\n")
    if len(head) > 4096 or len(roles_line) > 65536:
        raise gym.GradingError("the export's census or roles line is too long")
    word, _, census_text = head.partition(" ")
    census = _json(census_text, "census")
    roles = _json(roles_line, "roles")
    if word not in ("dump", "skip") or not isinstance(census, dict):
        raise gym.GradingError(f"the export's census line is malformed: {head[:200]!r}")
    if not all(type(census.get(k)) is int for k in (*LIMITS, *CENSUS_EXTRA)):
        raise gym.GradingError(f"the export's census is incomplete: {head[:200]!r}")
    counts: dict[str, int] = {k: int(census[k]) for k in (*LIMITS, *CENSUS_EXTRA)}
    if not isinstance(roles, dict) or not isinstance(roles.get("roles"), list):
        raise gym.GradingError(f"the export's roles line is malformed: {roles_line[:200]!r}")
    dump_b64 = dump_b64.strip()
    if word == "dump" and not re.fullmatch(r"[A-Za-z0-9+/]+={0,2}", dump_b64):
        raise gym.GradingError("the export's dump is not base64")
    return counts, roles, dump_b64 if word == "dump" else ""


def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise gym.GradingError(f"the export's {what} line is not JSON: {exc}") from None


def run_runner(
    image: str,
    spec: dict[str, Any],
    dump: bytes,
    *,
    timeout: float = RUNNER_TIMEOUT,
    sandboxes: gym.sandbox.SandboxProvider | None = None,
    database: bytes = b"",
) -> dict[str, Any]:
    """Stage a fresh grading container, run the runner there, return its report.

    ``sandboxes`` provides the grading container (`SandboxProvider.grader`; the default
    provider when None). ``database``: the task's own database dump, loaded there before
    anything else (`runner.load_database`). The report's size is bounded by the runner
    (`runner.MAX_REPORT_BYTES` for the agent's parts); it is parsed here with its size
    checked first.

    Raises:
        GradingError: the runner left no report, an unreadable one, or reported its own
            crash.
        SandboxError: the grading container failed.
    """
    provider = sandboxes or gym.sandbox.default_sandboxes()
    sandbox = provider.grader(grading_config(image))
    try:
        paths = {"dump_path": "/grade/final.dump"}
        if database:
            paths["database_path"] = "/grade/database.sql"
        files = {
            "runner.py": RUNNER_PATH.read_bytes(),
            "boxgym_memory.py": gym.grading.MEMORY_KILLS.read_bytes(),
            "spec.json": json.dumps({**spec, **paths}).encode(),
            "final.dump": dump,
        }
        if database:
            files["database.sql"] = database
        sandbox.put_files("/grade", files, timeout=60)
        out = f"{REPORT_DIR}/boxgym-grade/report.json"
        cmd = ["/usr/bin/python3", "-I", "/grade/runner.py", "/grade/spec.json", out]
        result = sandbox.exec(cmd, user=PG_USER, timeout=timeout)
        if result.timed_out:
            raise gym.GradingError(f"the grading runner did not finish in {timeout:.0f}s")
        try:
            raw = sandbox.read_file(out, max_bytes=MAX_REPORT, timeout=60, user=PG_USER)
        except gym.SandboxError:
            sandbox.ensure_running()
            raise gym.GradingError(
                f"the grading runner wrote no report (exit {result.exit_code}): "
                f"{result.stderr.strip()[-800:]}"
            ) from None
        try:
            report = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise gym.GradingError(f"the grading runner's report is not JSON: {exc}") from None
    finally:
        provider.release(sandbox)  # removed in the background
    if not isinstance(report, dict):
        raise gym.GradingError("the grading runner's report is not a JSON object")
    if report.get("crash"):
        raise gym.GradingError(f"the grading runner crashed: {str(report['crash'])[-1500:]}")
    return report


def grade_sql(
    task: gym.Task,
    export: SQLExport,
    image: str,
    *,
    sandboxes: gym.sandbox.SandboxProvider | None = None,
) -> gym.Verdict:
    """Grade an exported final state (the episode's end, and regrading).

    ``sandboxes`` provides the grading container (hardened Docker by default).
    """
    spec = TaskSpec.of(task)
    if export.problem:
        state = gym.Component(score=0.0, passed=False, explanation=export.problem)
        return gym.grading.compose({"state": state}, [], grader=GRADER, version=GRADER_VERSION)
    try:
        report = _graded_report(spec, export, image, sandboxes)
        components, flags = evaluate(spec, report)
    except (gym.SandboxError, gym.GradingError) as exc:
        return gym.Verdict.infra(
            f"grading failed: {exc}", grader=GRADER, grader_version=GRADER_VERSION
        )
    return gym.grading.compose(components, flags, grader=GRADER, version=GRADER_VERSION)


_snapshots = gym.authoring.LRUCache()


def _graded_report(
    spec: TaskSpec, export: SQLExport, image: str, sandboxes: gym.sandbox.SandboxProvider | None
) -> dict[str, Any]:
    """The runner's report, completed with the cached snapshots and the export's roles."""
    write = spec.kind == "write"
    pkey = ("pristine", image, GRADER_VERSION, spec.database_sha256, *sorted(spec.ignore_columns))
    gkey = (
        "gold",
        image,
        GRADER_VERSION,
        hashlib.sha256(spec.model_dump_json().encode()).hexdigest(),
    )
    pristine, gold = _snapshots.get(pkey), _snapshots.get(gkey) if write else None
    scope = [spec.table(t) for t in spec.scope]
    runner_spec = {
        "kind": spec.kind,
        "gold": spec.gold,
        "answer": export.answer_query,
        "scope": scope if write else [],  # the tables whose rows are diffed
        "owns": list(spec.owns),
        "schema": spec.schema_name,
        "ignore_columns": list(spec.ignore_columns),
        "timeout": GRADE_TIMEOUT,
        "want_pristine": pristine is None,
        "want_gold": write and gold is None,
        # One restore step is enough when no function could be called (see runner).
        "nothing_callable": export.census.get("routines") == 0
        and export.census.get("agent_sessions") == 0,
        # What built-ins with effects change, as the agent left it (see runner).
        "restored_state": {k: export.census[k] for k in STATE_KEYS if k in export.census},
        "expected_rows": {t: [d for d, _ in rows] for t, rows in gold["rows"].items()}
        if gold
        else {},
    }
    report = run_runner(
        image, runner_spec, export.dump(), sandboxes=sandboxes, database=spec.dump()
    )
    if report.get("gold_error") and report.get("final_error") is None:
        return report
    if pristine is None and "pristine" in report:
        pristine = report["pristine"]
        _snapshots.put(pkey, pristine)
    report["pristine"] = pristine
    report["final_roles"] = export.roles
    report["answer_problem"] = export.answer_problem
    if write:
        if gold is None and "gold" in report:
            gold = {"snapshot": report.pop("gold"), "rows": report.pop("gold_rows")}
            _snapshots.put(gkey, gold)
        if gold is not None:
            report["gold"] = gold["snapshot"]
            report["gold_previews"] = {d: p for rows in gold["rows"].values() for d, p in rows if p}
    return report


# -- deciding ------------------------------------------------------------------------------


def evaluate(
    spec: TaskSpec, report: dict[str, Any]
) -> tuple[dict[str, gym.Component], list[gym.Flag]]:
    """Components and flags from a runner report.

    Raises:
        GradingError: the gold solution failed, the report is incomplete, or a restore
            failed on a grading host out of disk (the kernel's measure, not a message).
    """
    failed = report.get("final_error") is not None
    if report.get("gold_error") and not failed:
        raise gym.GradingError(f"the task's gold SQL failed: {str(report['gold_error'])[:800]}")
    if failed:
        return _state_failure(report), []
    try:
        pristine, final = report["pristine"], report["final"]
        expected = report["gold"] if spec.kind == "write" else pristine
    except KeyError as exc:
        raise gym.GradingError(f"the runner report lacks {exc}") from exc
    if pristine is None or expected is None:
        raise gym.GradingError("the runner report lacks the pristine or the gold snapshot")
    read = spec.kind == "read"
    scope = {spec.table(t) for t in spec.scope} if not read else set()
    flags = side_effect_flags(pristine, expected, final, scope, read=read)
    flags += role_flags(pristine.get("roles"), report.get("final_roles"), read=read)
    if read:
        if report.get("answer_problem"):
            return {"answer": _fail(str(report["answer_problem"]))}, _dedup(flags)
        gold_answer, answer = report.get("gold_answer"), report.get("answer")
        if not isinstance(gold_answer, dict) or not isinstance(answer, dict):
            raise gym.GradingError("the runner report lacks the answers")
        if answer.get("error"):
            host_disk(report)  # the answer failed for want of disk, not the agent's
            host_memory(report)
        return {"answer": compare_answers(gold_answer, answer, ordered=spec.ordered)}, _dedup(flags)
    diffs = report.get("row_diffs", {})
    previews = report.get("gold_previews", {})
    tables = tables_component(expected, final, scope, diffs, previews)
    schema = schema_component(expected, final, scope)
    return {"tables": tables, "schema": schema}, _dedup(flags)


def _state_failure(report: dict[str, Any]) -> dict[str, gym.Component]:
    """The ``state`` component of a final state that could not be read: the agent's fail.

    Raises:
        GradingError: the grading host's disk was short without the agent (`host_disk`).
    """
    host_disk(report)
    host_memory(report)
    why = str(report["final_error"])
    if report.get("restore_failed"):
        why = f"the final state could not be loaded again: {why[-600:]}"
    return {"state": gym.Component(score=0.0, passed=False, explanation=why[:1000])}


def host_disk(report: dict[str, Any]) -> None:
    """Nothing when the disk is not the host's fault (`HOST_DISK_MIN_MB`).

    Raises:
        GradingError: the free space with the agent's state's share added back is short.
    """
    free, took = report.get("disk_free_mb"), report.get("restore_wrote_mb")
    if type(free) is not int or free < 0:
        return
    took = took if type(took) is int and took > 0 else 0
    if free + took < HOST_DISK_MIN_MB:
        raise gym.GradingError(
            f"the grading host is out of disk ({free} MiB free under the grading server, "
            f"{took} MiB of it the agent's state)"
        )


def host_memory(report: dict[str, Any]) -> None:
    """Nothing unless the kernel killed in the grading container for the host's want of memory.

    Raises:
        GradingError: a process was killed while the container stayed below its own
            memory limit (the runner's ``host_oom``, from the kernel's counters).
    """
    why = report.get("host_oom")
    if isinstance(why, str) and why:
        raise gym.GradingError(why[:1000])


class _Flags:
    """Collects flags; in a read task every change is also ``write_in_read_task``."""

    def __init__(self, read: bool) -> None:
        self.read = read
        self.items: list[gym.Flag] = []

    def add(self, name: str, detail: str, *, specific: bool = False) -> None:
        if self.read:
            self._push("write_in_read_task", detail, True)
            if not specific:
                return
        self._push(name, detail, name != "extra_objects")

    def _push(self, name: str, detail: str, gating: bool) -> None:
        self.items.append(gym.Flag(name=name, detail=detail[:500], gating=gating))


def _dedup(flags: list[gym.Flag]) -> list[gym.Flag]:
    seen, out = set(), []
    for f in flags:
        if (f.name, f.detail) not in seen:
            seen.add((f.name, f.detail))
            out.append(f)
    return out


def side_effect_flags(
    pristine: dict[str, Any],
    expected: dict[str, Any],
    final: dict[str, Any],
    scope: set[str],
    *,
    read: bool,
) -> list[gym.Flag]:
    """Forbidden side effects: ``final`` against the ``expected`` state (gold or pristine).

    Objects of tables in ``scope`` are judged by the state components instead, except
    constraints and triggers of the pristine database that the expected state still has:
    dropping or disabling those is flagged wherever it happens. In a read task a new
    plain view is a helper the prompt allows: it is ignored; anything else raises
    ``write_in_read_task``.
    """
    flags = _Flags(read)
    _relation_flags(expected, final, scope, flags)
    _index_flags(expected, final, scope, flags)
    _constraint_flags(pristine, expected, final, scope, flags)
    _trigger_flags(pristine, expected, final, scope, flags)
    _sequence_flags(expected, final, flags)
    _large_object_flags(expected, final, flags)
    for kind in ("functions", "types", "others"):
        _named_flags(kind, expected.get(kind, {}), final.get(kind, {}), flags)
    return _dedup(flags.items)


_KIND = {
    "r": "table",
    "p": "table",
    "v": "view",
    "m": "materialized view",
    "S": "sequence",
    "f": "foreign table",
    "c": "type",
}


def _relation_flags(
    expected: dict[str, Any], final: dict[str, Any], scope: set[str], flags: _Flags
) -> None:
    e_rels, f_rels = expected["relations"], final["relations"]
    for name in sorted(set(e_rels) | set(f_rels)):
        e, f = e_rels.get(name), f_rels.get(name)
        rel = e or f
        assert rel is not None
        if name in scope or (rel["kind"] == "S" and rel.get("table")):
            continue
        kind = _KIND.get(rel["kind"], "relation")
        if e and not f:
            flags.add("object_dropped_outside_scope", f"{kind} {name} was dropped")
        elif f and not e:
            if not (flags.read and f["kind"] in HELPER_KINDS):  # a helper: allowed in reads
                flags.add("extra_objects", f"{kind} {name} was created")
        elif e and f:
            if e["kind"] != f["kind"] or e["def"] != f["def"]:
                flags.add("object_altered_outside_scope", f"{kind} {name} was redefined")
            elif e.get("props") != f.get("props"):
                flags.add(
                    "object_altered_outside_scope",
                    f"{kind} {name}: options changed ({e.get('props')} -> {f.get('props')})",
                )
            if e["kind"] in ("r", "p") and f["kind"] in ("r", "p"):
                _table_flags(name, expected["tables"][name], final["tables"][name], flags)


def _table_flags(name: str, e: dict[str, Any], f: dict[str, Any], flags: _Flags) -> None:
    if e["columns"] != f["columns"]:
        changed = sorted(
            c
            for c in set(e["columns"]) | set(f["columns"])
            if e["columns"].get(c) != f["columns"].get(c)
        )
        flags.add(
            "object_altered_outside_scope", f"table {name}: columns changed: {', '.join(changed)}"
        )
    if f["too_large"] or e["hash"] != f["hash"]:
        flags.add(
            "rows_changed_outside_scope",
            f"table {name}: rows changed ({e['count']} rows expected, {f['count']} found)",
        )


def _index_flags(
    expected: dict[str, Any], final: dict[str, Any], scope: set[str], flags: _Flags
) -> None:
    e_idx = {(i["table"], i["def"]) for i in expected["indexes"]}
    f_idx = {(i["table"], i["def"]) for i in final["indexes"]}
    for table, definition in sorted(e_idx - f_idx):
        if table not in scope and table in final["tables"]:
            flags.add("object_dropped_outside_scope", f"index on {table} was dropped: {definition}")
    for table, definition in sorted(f_idx - e_idx):
        if table not in scope:
            flags.add("extra_objects", f"index on {table} was created: {definition}")


def _key(item: dict[str, Any], *fields: str) -> tuple[Any, ...]:
    return tuple(item[f] for f in fields)


def _constraint_flags(
    pristine: dict[str, Any],
    expected: dict[str, Any],
    final: dict[str, Any],
    scope: set[str],
    flags: _Flags,
) -> None:
    """Constraints of the pristine state the expected one keeps, and ones added outside scope.

    A CHECK is judged by what it refuses (`environments.sql.checks.holds`): it was
    dropped when the final table's checks do not refuse every row it refuses, disabled
    when they do only with their NOT VALID ones (whatever the constraints' names and
    texts); a CHECK added outside scope is one that refuses a row the expected table's
    checks do not.
    """
    fields = ("table", "type", "def")
    p_keys = {_key(c, *fields) for c in pristine["constraints"]}
    f_map = {_key(c, *fields): c for c in final["constraints"]}
    f_all, f_valid = _check_defs(final), _check_defs(final, validated=True)
    e_all = _check_defs(expected)
    e_keys = set()
    for c in expected["constraints"]:
        key = _key(c, *fields)
        e_keys.add(key)
        table = c["table"]
        if table not in final["tables"]:
            continue
        detail = f"{table}: {c['def']}"
        if c["type"] == "c":
            types = _types(final, table)
            held = holds(f_all.get(table, []), c["def"], types, _not_null(final, table))
            valid = holds(f_valid.get(table, []), c["def"], types, _not_null(final, table))
        else:
            got = f_map.get(key)
            held, valid = got is not None, got is not None and got["validated"]
        if not held and key in p_keys:  # one the gold added is the state components'
            flags.add("constraint_dropped", f"{detail} (was {c['name']})", specific=True)
        elif held and c["validated"] and not valid:
            flags.add("constraint_disabled", f"{detail} is NOT VALID", specific=True)
    for key, c in sorted(f_map.items()):
        if key in e_keys or c["table"] in scope:
            continue
        table = c["table"]
        types, not_null = _types(expected, table), _not_null(expected, table)
        if c["type"] == "c" and holds(e_all.get(table, []), c["def"], types, not_null):
            continue  # what the expected table's checks refuse already
        _added_flag(flags, expected, "constraint", c["table"], c["def"])


def _checks_of(snap: dict[str, Any]) -> dict[str, frozenset[str]]:
    """Table -> the canonical conjuncts of its CHECK constraints."""
    return {
        table: conjuncts(d, _types(snap, table), _not_null(snap, table))
        for table, d in _check_defs(snap).items()
    }


def _check_defs(snap: dict[str, Any], *, validated: bool = False) -> dict[str, list[str]]:
    """Table -> the definitions of its CHECK constraints (``validated``: valid ones)."""
    defs: dict[str, list[str]] = {}
    for c in snap["constraints"]:
        if c["type"] == "c" and (c.get("validated", True) or not validated):
            defs.setdefault(c["table"], []).append(c["def"])
    return defs


def _types(snap: dict[str, Any], table: str) -> dict[str, str]:
    """A table's column names and types (what says when a literal's cast is its column's).

    A column with a collation of its own has it in its type (``text COLLATE "x"``): its
    equality may not be its bytes', so its checks of strings are not decided.
    """
    columns = snap["tables"].get(table, {}).get("columns", {})
    return {name: _typed(col) for name, col in columns.items()}


def _not_null(snap: dict[str, Any], table: str) -> frozenset[str]:
    """A table's columns declared NOT NULL (their checks never see a NULL)."""
    columns = snap["tables"].get(table, {}).get("columns", {})
    return frozenset(name for name, col in columns.items() if col.get("not_null"))


def _typed(column: dict[str, Any]) -> str:
    kind, collation = str(column.get("type", "")), column.get("collation")
    return f"{kind} COLLATE {collation}" if collation else kind


def _not_checks(keys: Counter[tuple[Any, ...]]) -> Counter[tuple[Any, ...]]:
    return Counter({k: n for k, n in keys.items() if k[0] != "c"})


def _trigger_flags(
    pristine: dict[str, Any],
    expected: dict[str, Any],
    final: dict[str, Any],
    scope: set[str],
    flags: _Flags,
) -> None:
    p_keys = {_key(t, "table", "def") for t in pristine["triggers"]}
    f_map = {_key(t, "table", "def"): t for t in final["triggers"]}
    e_keys = set()
    for t in expected["triggers"]:
        key = _key(t, "table", "def")
        e_keys.add(key)
        got = f_map.get(key)
        if got is None and key in p_keys and t["table"] in final["tables"]:
            flags.add("trigger_dropped", f"{t['table']}: trigger {t['name']}", specific=True)
        elif got is not None and t["enabled"] in "OA" and got["enabled"] not in "OA":
            flags.add(
                "trigger_disabled",
                f"{t['table']}: trigger {t['name']} "
                f"(enabled {t['enabled']!r} -> {got['enabled']!r})",
                specific=True,
            )
    for key, t in sorted(f_map.items()):
        if key not in e_keys and t["table"] not in scope:
            _added_flag(flags, expected, "trigger", t["table"], t["name"])


def _added_flag(flags: _Flags, expected: dict[str, Any], noun: str, table: str, label: str) -> None:
    """A constraint or trigger the expected state lacks, on a table outside the scope."""
    if table not in expected["tables"]:  # a relation the agent made: one of its parts
        flags.add("extra_objects", f"{noun} of the new relation {table}: {label}")
    else:
        flags.add("object_altered_outside_scope", f"{noun} added to {table}: {label}")


def _next_value(seq: dict[str, Any]) -> int:
    """The value the next ``nextval`` of a sequence gives."""
    return int(seq["last_value"]) + (int(seq["increment"]) if seq["is_called"] else 0)


def _sequence_flags(expected: dict[str, Any], final: dict[str, Any], flags: _Flags) -> None:
    """Sequences of the expected state: gone, redefined or rewound (read tasks: moved at all).

    Moving a sequence forward (``nextval`` in a write task, a failed insert) leaves gaps,
    which a sequence is free to have; moving it back makes the next insert collide. A
    column's sequence (identity, serial) is matched by its column, since the table's
    owner may rename it: one renamed and rewound passed unflagged (a red-team helper).
    """
    e_seqs, f_seqs = _sequence_keys(expected), _sequence_keys(final)
    for key in sorted(e_seqs):
        name, e = e_seqs[key]
        if key not in f_seqs:
            if key[0] == "column":  # a plain sequence dropped: `_relation_flags`
                flags.add(
                    "sequence_changed",
                    f"sequence {name} of column {key[1]} is gone or no longer the column's",
                    specific=True,
                )
            continue
        _, f = f_seqs[key]
        if e["def"] != f["def"]:
            flags.add("sequence_changed", f"sequence {name} was redefined", specific=True)
            continue
        ahead, now = _next_value(e), _next_value(f)
        moved = (now - ahead) * (1 if int(e["increment"]) > 0 else -1)
        if moved < 0 or (flags.read and moved != 0):
            flags.add(
                "sequence_changed",
                f"sequence {name}: next value {now}, expected {ahead}"
                + (" (rewound)" if moved < 0 else ""),
                specific=True,
            )


def _sequence_keys(state: dict[str, Any]) -> dict[tuple[str, str], tuple[str, dict[str, Any]]]:
    """A state's sequences by the column they belong to, else (or if shared) by name."""
    seqs: dict[str, dict[str, Any]] = state.get("sequences", {})
    owners = Counter(seq.get("owner", "") for seq in seqs.values())
    keyed = {}
    for name, seq in seqs.items():
        owner = seq.get("owner", "")
        key = ("column", owner) if owner and owners[owner] == 1 else ("name", name)
        keyed[key] = (name, seq)
    return keyed


def _large_object_flags(expected: dict[str, Any], final: dict[str, Any], flags: _Flags) -> None:
    e_los, f_los = expected.get("large_objects", {}), final.get("large_objects", {})
    for oid in sorted(set(e_los) | set(f_los), key=lambda o: (len(o), o)):
        if oid not in f_los:
            what = "was removed"
        elif oid not in e_los:
            what = "was stored"
        elif e_los[oid] != f_los[oid]:
            what = "was changed"
        else:
            continue
        flags.add("large_objects_changed", f"large object {oid} {what}", specific=True)


def role_flags(
    expected: dict[str, Any] | None, final: dict[str, Any] | None, *, read: bool
) -> list[gym.Flag]:
    """Roles and per-database settings changed since the pristine server (all gating)."""
    if not expected or not final:
        return []
    flags = _Flags(read)
    e_roles = {r.get("name"): r for r in expected.get("roles", []) if isinstance(r, dict)}
    f_roles = {r.get("name"): r for r in final.get("roles", []) if isinstance(r, dict)}
    for name in sorted(set(e_roles) | set(f_roles), key=str):
        e, f = e_roles.get(name), f_roles.get(name)
        if e != f:
            fields = sorted(
                k for k in set(e or {}) | set(f or {}) if (e or {}).get(k) != (f or {}).get(k)
            )
            flags.add("role_changed", f"role {name}: {', '.join(fields)} changed", specific=True)
    if expected.get("database_settings") != final.get("database_settings"):
        flags.add("role_changed", "per-database settings changed", specific=True)
    return flags.items


def _named_flags(kind: str, expected: dict[str, str], final: dict[str, str], flags: _Flags) -> None:
    noun = {"functions": "function ", "types": "type ", "others": ""}[kind]
    for name in sorted(set(expected) | set(final)):
        if name not in final:
            flags.add("object_dropped_outside_scope", f"{noun}{name} was dropped")
        elif name not in expected:
            flags.add("extra_objects", f"{noun}{name} was created")
        elif expected[name] != final[name]:
            flags.add("object_altered_outside_scope", f"{noun}{name} was redefined")


def tables_component(
    expected: dict[str, Any],
    final: dict[str, Any],
    scope: set[str],
    diffs: dict[str, Any],
    previews: dict[str, str] | None = None,
) -> gym.Component:
    """Gated: every table in scope holds the same rows as in the gold state."""
    bad = []
    for name in sorted(scope):
        e, f = expected["tables"].get(name), final["tables"].get(name)
        if e is None and f is None:
            continue
        if e is None:
            bad.append(f"{name} should not exist")
        elif f is None:
            bad.append(f"{name} is missing")
        elif f["too_large"] or e["hash"] != f["hash"]:
            bad.append(_row_problem(name, e, f, diffs.get(name), previews or {}))
    return _scope_component(scope, bad, "hold the expected rows")


def _scope_component(scope: set[str], bad: list[str], what: str) -> gym.Component:
    """Score: the share of the tables in scope with no problem; passed when none has one."""
    ok = len(scope) - len(bad)
    text = f"{ok}/{len(scope)} tables in scope {what}"
    if bad:
        text += "; " + "; ".join(bad)
    return gym.Component(score=ok / max(len(scope), 1), passed=not bad, explanation=text)


def _row_problem(
    name: str,
    e: dict[str, Any],
    f: dict[str, Any],
    diff: dict[str, Any] | None,
    previews: dict[str, str],
) -> str:
    if f["too_large"]:
        return f"{name} has too many rows to compare"
    text = f"{name}: {f['count']} rows, {e['count']} expected"
    if e["hashed_columns"] != f["hashed_columns"]:
        return text + " (columns differ)"
    if diff:
        text += f", {diff['missing']} expected rows missing, {diff['extra']} unexpected"
        shown = {**previews, **diff.get("previews", {})}
        missing = [shown[d] for d in diff["missing_sample"] if d in shown]
        extra = [shown[d] for d in diff["extra_sample"] if d in shown]
        if missing:
            text += f" (missing e.g. {missing[0][:300]})"
        if extra:
            text += f" (unexpected e.g. {extra[0][:300]})"
    return text


def schema_component(
    expected: dict[str, Any], final: dict[str, Any], scope: set[str]
) -> gym.Component:
    """Gated: tables in scope have the gold's definition.

    Columns, options, constraints, triggers, indexes (none more that refuses rows),
    rules and inheritance children.
    """
    bad = []
    for name in sorted(scope):
        e, f = expected["tables"].get(name), final["tables"].get(name)
        if e is None or f is None:
            continue  # existence is judged by the tables component
        problems = _schema_problems(name, expected, final)
        if problems:
            bad.append(f"{name}: " + ", ".join(problems))
    return _scope_component(scope, bad, "have the expected definition")


def _schema_problems(name: str, expected: dict[str, Any], final: dict[str, Any]) -> list[str]:
    problems = []
    e_tab, f_tab = expected["tables"][name], final["tables"][name]
    e_cols, f_cols = e_tab["columns"], f_tab["columns"]
    for col in sorted(set(e_cols) | set(f_cols)):
        if col not in f_cols:
            problems.append(f"column {col} missing")
        elif col not in e_cols:
            problems.append(f"unexpected column {col}")
        elif e_cols[col] != f_cols[col]:
            diff = [k for k in e_cols[col] if e_cols[col][k] != f_cols[col].get(k)]
            problems.append(
                f"column {col}: "
                + ", ".join(
                    f"{k} {f_cols[col].get(k)!r} (expected {e_cols[col][k]!r})" for k in diff
                )
            )
    if e_tab.get("props") != f_tab.get("props"):
        problems.append(f"table options {f_tab.get('props')!r} (expected {e_tab.get('props')!r})")

    def defs(snap: dict[str, Any], kind: str, *fields: str) -> Counter[tuple[Any, ...]]:
        return Counter(_key(x, *fields) for x in snap[kind] if x["table"] == name)

    for kind, fields in (("constraints", ("type", "def")), ("triggers", ("def", "enabled"))):
        want, got = defs(expected, kind, *fields), defs(final, kind, *fields)
        if kind == "constraints":  # checks apart: what they refuse, below
            want, got = _not_checks(want), _not_checks(got)
        shown = fields.index("def")  # what a reader can act on: the definition
        problems += [f"{kind[:-1]} missing: {k[shown]}" for k in sorted(want - got)]
        problems += [f"unexpected {kind[:-1]}: {k[shown]}" for k in sorted(got - want)]
    want_checks = _checks_of(expected).get(name, frozenset())
    got_checks = _checks_of(final).get(name, frozenset())
    problems += [f"check missing: {c}" for c in sorted(want_checks - got_checks)]
    problems += [f"unexpected check: {c}" for c in sorted(got_checks - want_checks)]
    want, got = defs(expected, "indexes", "def"), defs(final, "indexes", "def")
    problems += [f"index missing: {k[0]}" for k in sorted(want - got)]
    refusing = Counter(
        _key(x, "def") for x in final["indexes"] if x["table"] == name and x.get("refuses")
    )  # an index more that refuses rows (unique, or computing on rows) changes what the
    # table takes; one on plain columns not
    problems += [f"unexpected index that refuses rows: {k[0]}" for k in sorted(refusing - want)]
    return problems


_PLAIN = (str, bool, type(None))


def _plain_rows(result: dict[str, Any]) -> bool:
    """Whether an answer's rows are lists of canonical values (str, bool or None) only."""
    rows = result.get("rows")
    return isinstance(rows, list) and all(
        isinstance(r, list) and all(type(v) in _PLAIN for v in r) for r in rows
    )


def compare_answers(
    gold: dict[str, Any], answer: dict[str, Any], *, ordered: bool
) -> gym.Component:
    """Gated: the answer's rows equal the gold rows (as a multiset, or a list if ordered).

    Values are compared in canonical form (see runner.py), plain values only (str, bool,
    None): a row of any other type fails. Column names are ignored and columns may come
    in any order, as long as one order makes the rows match.
    """
    if answer.get("error"):
        return _fail(
            f"the answer query failed on a fresh copy of the database: {str(answer['error'])[:600]}"
        )
    if answer.get("truncated"):
        return _fail("the answer query returned too many rows")
    if not _plain_rows(gold) or not _plain_rows(answer):
        return _fail("the answer's rows are not plain values")
    want_cols, got_cols = len(gold["columns"]), len(answer["columns"])
    if want_cols != got_cols:
        return _fail(
            f"expected {want_cols} columns, the answer has {got_cols} "
            f"({', '.join(str(c) for c in answer['columns'])[:300]})"
        )
    want, got = gold["rows"], answer["rows"]
    if any(len(r) != want_cols for r in want) or any(len(r) != got_cols for r in got):
        return _fail("the answer's rows do not all have its columns")
    for perm in _orders(want, got, want_cols):
        moved = [[row[i] for i in perm] for row in got]
        if (moved == want) if ordered else (_bag(moved) == _bag(want)):
            return gym.Component(score=1.0, passed=True, explanation=f"all {len(want)} rows match")
    return _fail(_answer_problem(want, got, ordered))


def _fail(text: str) -> gym.Component:
    return gym.Component(score=0.0, passed=False, explanation=text)


def _bag(rows: list[list[Any]]) -> Counter[str]:
    return Counter(json.dumps(r, separators=(",", ":")) for r in rows)


def _orders(want: list[list[Any]], got: list[list[Any]], n: int) -> list[tuple[int, ...]]:
    """Column orders worth trying: as given, then those that match column contents."""
    identity = tuple(range(n))
    if n > 6 or n < 2:
        return [identity]
    col_bag = [Counter(json.dumps(r[i]) for r in got) for i in range(n)]
    want_bag = [Counter(json.dumps(r[i]) for r in want) for i in range(n)]
    perms = [
        p
        for p in itertools.permutations(range(n))
        if p != identity and all(col_bag[p[i]] == want_bag[i] for i in range(n))
    ]
    return [identity, *perms[:24]]


def _answer_problem(want: list[list[Any]], got: list[list[Any]], ordered: bool) -> str:
    missing, extra = _bag(want) - _bag(got), _bag(got) - _bag(want)
    if not missing and not extra and ordered:
        return f"the {len(want)} rows are right but not in the requested order"
    text = f"expected {len(want)} rows, the answer has {len(got)}"
    if missing:
        text += f"; {sum(missing.values())} expected rows missing (e.g. {min(missing)[:200]})"
    if extra:
        text += f"; {sum(extra.values())} unexpected rows (e.g. {min(extra)[:200]})"
    return text
