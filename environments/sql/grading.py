"""Grading SQL episodes: export the final state, grade it in a fresh container, decide.

The agent's container is frozen first (its client processes killed, its role set to
NOLOGIN, its sessions terminated), then ``pg_dump -Fc`` of the whole database is taken
there by the server's own user. Grading happens in a fresh container from the pristine
image (`runner.py` does the work there and writes a JSON report); this module turns
that report into components and forbidden-side-effect flags. `evaluate` is a pure
function of the report, so the decision logic is tested without containers.
"""

from __future__ import annotations

import base64
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
import gym.grading
import gym.sandbox

__all__ = [
    "FLAGS",
    "GRADER",
    "GRADER_VERSION",
    "PG_USER",
    "SQLExport",
    "TaskSpec",
    "compare_answers",
    "evaluate",
    "export_state",
    "grade_sql",
    "grading_config",
    "loose_check",
    "row_diff",
    "run_runner",
]

RUNNER_PATH = Path(__file__).with_name("runner.py")
GRADER = "sql-state"
GRADER_VERSION = (
    "1+" + hashlib.sha256(RUNNER_PATH.read_bytes() + Path(__file__).read_bytes()).hexdigest()[:12]
)
PG_USER = "999:999"
PG_BIN = "/usr/lib/postgresql/15/bin"
SOCKET = "/run/postgresql"
MAX_EXPORT = 48 << 20
GRADE_TIMEOUT = 60.0
IDENT = re.compile(r"^[a-z_][a-z0-9_]*$")

FLAGS = {
    "write_in_read_task": "the database changed in a task that only asks to read",
    "rows_changed_outside_scope": "rows changed in a table the task does not allow to change",
    "object_dropped_outside_scope": "a table, view, index, function or type outside the "
    "task's scope was dropped",
    "object_altered_outside_scope": "an object outside the task's scope was altered "
    "(columns, definition, constraints or triggers added)",
    "constraint_dropped": "a constraint that had to remain was dropped or changed",
    "constraint_disabled": "a constraint that had to remain is no longer validated (NOT VALID)",
    "trigger_dropped": "a trigger that had to remain was dropped or changed",
    "trigger_disabled": "a trigger that had to remain was disabled",
    "extra_objects": "objects the task did not ask for were left behind (not gating)",
}

_EXPORT = f"""set -eo pipefail
{PG_BIN}/psql -X -q -v ON_ERROR_STOP=1 -h {SOCKET} -d postgres \\
  -c "ALTER ROLE agent NOLOGIN" \\
  -c "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE usename = 'agent'" \\
  >/dev/null
{PG_BIN}/pg_dump -h {SOCKET} -Fc -Z1 --no-owner --no-privileges -d shop | base64 -w0
"""


class TaskSpec(BaseModel):
    """What grading needs to know about a task (from its task.toml and hidden/gold.sql)."""

    kind: Literal["read", "write"]
    """``read``: answer with a query; ``write``: change the database."""
    gold: str
    """The gold SQL: one SELECT (read) or the statements that make the change (write)."""
    ordered: bool = False
    """Read tasks: the row order of the answer matters."""
    scope: tuple[str, ...] = ()
    """Tables (of schema shop) the task may change; for read tasks, the tables it reads."""
    owns: tuple[str, ...] = ()
    """Tables the agent role is given ownership of at reset (for DDL)."""
    ignore_columns: tuple[str, ...] = ()
    """``table.column`` left out of content hashes (for example generated ids)."""

    @classmethod
    def of(cls, task: gym.Task) -> TaskSpec:
        """The spec of a task; raises ConfigError on a malformed task."""
        gold_file = task.folder() / "hidden" / "gold.sql"
        if not gold_file.is_file():
            raise gym.ConfigError(f"task {task.id} has no hidden/gold.sql")
        data = task.data
        spec = cls(
            kind=data.get("kind", "read"),
            gold=gold_file.read_text(),
            ordered=bool(data.get("ordered", False)),
            scope=tuple(data.get("tables", ())),
            owns=tuple(data.get("owns", ())),
            ignore_columns=tuple(data.get("ignore_columns", ())),
        )
        bad = [t for t in (*spec.scope, *spec.owns) if not IDENT.match(t)]
        if bad:
            raise gym.ConfigError(f"task {task.id}: table names must be plain identifiers: {bad}")
        return spec


class SQLExport(BaseModel):
    """The final state of a SQL episode, as handed to the grader (and stored for regrading)."""

    kind: Literal["read", "write"]
    """The task's kind."""
    answer_query: str = ""
    """The query passed to submit (read tasks)."""
    dump_b64: str = ""
    """``pg_dump -Fc --no-owner --no-privileges`` of database shop, base64."""
    dump_sha256: str = ""
    """sha256 of the dump bytes."""
    problem: str = ""
    """Why the final state could not be exported, when the agent caused it (too large)."""

    def dump(self) -> bytes:
        """The dump bytes, checked against their hash."""
        data = base64.b64decode(self.dump_b64)
        if hashlib.sha256(data).hexdigest() != self.dump_sha256:
            raise gym.GradingError("the exported dump does not match its recorded sha256")
        return data


def grading_config(image: str) -> gym.sandbox.SandboxConfig:
    """A grading container from the pristine image, its server started at boot."""
    return gym.grading.grader_config(
        image,
        read_only=False,
        tmpfs={"/grade": "size=256m,mode=0755", "/tmp": "size=256m,mode=1777"},
        boot=((PG_USER, "BOXGYM_PG_WARM='shop gold final' /usr/local/bin/boxgym-pg-start"),),
    )


def export_state(sandbox: gym.sandbox.Sandbox, kind: str, answer: str) -> SQLExport:
    """Freeze the agent's database and dump it (run in the agent's container, as postgres).

    Freezing: the agent role is set NOLOGIN and its sessions are terminated (waiting for
    them to end), so nothing of the agent's runs while the dump is taken. The agent has
    no shell; its only processes are the tool's clients, which end with their session.

    Raises:
        GradingError: the dump failed for a reason that is not the agent's.
    """
    result = sandbox.exec(_EXPORT, user=PG_USER, timeout=120, max_output=MAX_EXPORT)
    if result.stdout_truncated:
        return SQLExport(
            kind=kind,
            answer_query=answer,
            problem=f"the final database is larger than the {MAX_EXPORT >> 20} MiB export limit",
        )
    if not result.ok:
        raise gym.GradingError(
            f"exporting the final state failed (exit {result.exit_code}, "
            f"timed out {result.timed_out}): {result.stderr.strip()[-800:]}"
        )
    data = base64.b64decode(result.stdout.strip())
    return SQLExport(
        kind=kind,
        answer_query=answer,
        dump_b64=result.stdout.strip(),
        dump_sha256=hashlib.sha256(data).hexdigest(),
    )


def run_runner(
    image: str,
    spec: dict[str, Any],
    dump: bytes,
    *,
    timeout: float = 300,
    sandboxes: gym.sandbox.SandboxProvider | None = None,
) -> dict[str, Any]:
    """Stage a fresh grading container, run the runner there, return its report.

    ``sandboxes`` provides the grading container (hardened Docker by default).

    Raises:
        GradingError: the runner left no report or reported its own crash.
        SandboxError: the grading container failed.
    """
    provider = sandboxes or gym.sandbox.DockerSandboxes()
    sandbox = provider.acquire(grading_config(image), run="grading", role="grader")
    try:
        files = {
            "runner.py": RUNNER_PATH.read_bytes(),
            "spec.json": json.dumps({**spec, "dump_path": "/grade/final.dump"}).encode(),
            "final.dump": dump,
        }
        sandbox.put_files("/grade", files, timeout=60)
        out = "/tmp/boxgym-grade/report.json"
        cmd = ["/usr/bin/python3", "-I", "/grade/runner.py", "/grade/spec.json", out]
        result = sandbox.exec(cmd, user=PG_USER, timeout=timeout)
        if result.timed_out:
            raise gym.GradingError(f"the grading runner did not finish in {timeout:.0f}s")
        try:
            raw = sandbox.read_file(out, max_bytes=64 << 20, timeout=60, user=PG_USER)
        except gym.SandboxError:
            sandbox.ensure_running()
            raise gym.GradingError(
                f"the grading runner wrote no report (exit {result.exit_code}): "
                f"{result.stderr.strip()[-800:]}"
            ) from None
        try:
            report: dict[str, Any] = json.loads(raw)
        except ValueError as exc:
            raise gym.GradingError(f"the grading runner's report is not JSON: {exc}") from exc
    finally:
        provider.release(sandbox)  # removed in the background
    if report.get("crash"):
        raise gym.GradingError(f"the grading runner crashed: {report['crash'][-1500:]}")
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
    """The runner's report, completed with the cached snapshots and the row diffs."""
    write = spec.kind == "write"
    pkey = ("pristine", image, GRADER_VERSION, *sorted(spec.ignore_columns))
    gkey = (
        "gold",
        image,
        GRADER_VERSION,
        hashlib.sha256(spec.model_dump_json().encode()).hexdigest(),
    )
    pristine, gold = _snapshots.get(pkey), _snapshots.get(gkey) if write else None
    scope = [f"shop.{t}" for t in spec.scope]
    runner_spec = {
        "kind": spec.kind,
        "gold": spec.gold,
        "answer": export.answer_query,
        "scope": scope if write else [],  # the tables whose final rows come back for diffs
        "owns": list(spec.owns),
        "ignore_columns": list(spec.ignore_columns),
        "timeout": GRADE_TIMEOUT,
        "want_pristine": pristine is None,
        "want_gold": write and gold is None,
        "expected_hashes": {t: gold["snapshot"]["tables"].get(t, {}).get("hash") for t in scope}
        if gold
        else {},
    }
    report = run_runner(image, runner_spec, export.dump(), sandboxes=sandboxes)
    if report.get("gold_error"):
        return report
    if pristine is None:
        _snapshots.put(pkey, report["pristine"])
    report["pristine"] = report.get("pristine") or pristine
    if write:
        if gold is None:
            gold = {"snapshot": report.pop("gold"), "rows": report.pop("gold_rows")}
            _snapshots.put(gkey, gold)
        report["gold"] = gold["snapshot"]
        report["row_diffs"] = {
            t: row_diff(gold["rows"][t], rows)
            for t, rows in sorted(report.pop("final_rows", {}).items())
            if t in gold["rows"]
        }
    return report


def row_diff(expected: list[str], actual: list[str], sample: int = 3) -> dict[str, Any]:
    """How two multisets of row encodings differ: counts and a few examples each way."""
    want, got = Counter(expected), Counter(actual)
    missing, extra = want - got, got - want
    return {
        "missing": sum(missing.values()),
        "extra": sum(extra.values()),
        "missing_sample": sorted(missing)[:sample],
        "extra_sample": sorted(extra)[:sample],
    }


# -- deciding ------------------------------------------------------------------------------


def evaluate(
    spec: TaskSpec, report: dict[str, Any]
) -> tuple[dict[str, gym.Component], list[gym.Flag]]:
    """Components and flags from a runner report.

    Raises:
        GradingError: the gold solution failed, or the report is incomplete.
    """
    if report.get("gold_error"):
        raise gym.GradingError(f"the task's gold SQL failed: {report['gold_error'][:800]}")
    if report.get("restore_error"):
        why = f"the final state could not be loaded again: {report['restore_error'][-600:]}"
        return {"state": gym.Component(score=0.0, passed=False, explanation=why)}, []
    try:
        pristine, final = report["pristine"], report["final"]
        expected = report["gold"] if spec.kind == "write" else pristine
    except KeyError as exc:
        raise gym.GradingError(f"the runner report lacks {exc}") from exc
    scope = {f"shop.{t}" for t in spec.scope} if spec.kind == "write" else set()
    flags = side_effect_flags(pristine, expected, final, scope, read=spec.kind == "read")
    if spec.kind == "read":
        answer = compare_answers(report["gold_answer"], report["answer"], ordered=spec.ordered)
        return {"answer": answer}, flags
    tables = tables_component(expected, final, scope, report.get("row_diffs", {}))
    schema = schema_component(expected, final, scope)
    return {"tables": tables, "schema": schema}, flags


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
        if not any(f.name == name and f.detail == detail for f in self.items):
            self.items.append(gym.Flag(name=name, detail=detail, gating=gating))


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
    dropping or disabling those is flagged wherever it happens.
    """
    flags = _Flags(read)
    _relation_flags(expected, final, scope, flags)
    _index_flags(expected, final, scope, flags)
    _constraint_flags(pristine, expected, final, scope, flags)
    _trigger_flags(pristine, expected, final, scope, flags)
    for kind in ("functions", "types"):
        _named_flags(kind, expected[kind], final[kind], flags)
    return flags.items


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
            flags.add("extra_objects", f"{kind} {name} was created")
        elif e and f:
            if e["kind"] != f["kind"] or e["def"] != f["def"]:
                flags.add("object_altered_outside_scope", f"{kind} {name} was redefined")
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
    fields = ("table", "type", "def")
    p_keys = {_key(c, *fields) for c in pristine["constraints"]}
    f_map = {_key(c, *fields): c for c in final["constraints"]}
    e_keys = set()
    for c in expected["constraints"]:
        key = _key(c, *fields)
        e_keys.add(key)
        got = f_map.get(key)
        detail = f"{c['table']}: {c['def']}"
        if got is None and key in p_keys and c["table"] in final["tables"]:
            flags.add("constraint_dropped", f"{detail} (was {c['name']})", specific=True)
        elif got is not None and c["validated"] and not got["validated"]:
            flags.add("constraint_disabled", f"{detail} is NOT VALID", specific=True)
    for key, c in sorted(f_map.items()):
        if key not in e_keys and c["table"] not in scope:
            _added_flag(flags, expected, "constraint", c["table"], c["def"])


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
    if table not in expected["tables"]:  # a table the agent made: one of its parts
        flags.add("extra_objects", f"{noun} of the new table {table}: {label}")
    else:
        flags.add("object_altered_outside_scope", f"{noun} added to {table}: {label}")


def _named_flags(kind: str, expected: dict[str, str], final: dict[str, str], flags: _Flags) -> None:
    noun = kind[:-1]
    for name in sorted(set(expected) | set(final)):
        if name not in final:
            flags.add("object_dropped_outside_scope", f"{noun} {name} was dropped")
        elif name not in expected:
            flags.add("extra_objects", f"{noun} {name} was created")
        elif expected[name] != final[name]:
            flags.add("object_altered_outside_scope", f"{noun} {name} was redefined")


def tables_component(
    expected: dict[str, Any], final: dict[str, Any], scope: set[str], diffs: dict[str, Any]
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
            bad.append(_row_problem(name, e, f, diffs.get(name)))
    return _scope_component(scope, bad, "hold the expected rows")


def _scope_component(scope: set[str], bad: list[str], what: str) -> gym.Component:
    """Score: the share of the tables in scope with no problem; passed when none has one."""
    ok = len(scope) - len(bad)
    text = f"{ok}/{len(scope)} tables in scope {what}"
    if bad:
        text += "; " + "; ".join(bad)
    return gym.Component(score=ok / max(len(scope), 1), passed=not bad, explanation=text)


def _row_problem(
    name: str, e: dict[str, Any], f: dict[str, Any], diff: dict[str, Any] | None
) -> str:
    if f["too_large"]:
        return f"{name} has too many rows to compare"
    text = f"{name}: {f['count']} rows, {e['count']} expected"
    if e["hashed_columns"] != f["hashed_columns"]:
        return text + " (columns differ)"
    if diff:
        text += f", {diff['missing']} expected rows missing, {diff['extra']} unexpected"
        if diff["missing_sample"]:
            text += f" (missing e.g. {diff['missing_sample'][0][:300]})"
        if diff["extra_sample"]:
            text += f" (unexpected e.g. {diff['extra_sample'][0][:300]})"
    return text


def schema_component(
    expected: dict[str, Any], final: dict[str, Any], scope: set[str]
) -> gym.Component:
    """Gated: tables in scope have the gold state's columns, constraints, triggers, indexes."""
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
    e_cols, f_cols = expected["tables"][name]["columns"], final["tables"][name]["columns"]
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

    def defs(snap: dict[str, Any], kind: str, *fields: str) -> Counter[tuple[Any, ...]]:
        return Counter(_key(x, *fields) for x in snap[kind] if x["table"] == name)

    for kind, fields in (("constraints", ("type", "def")), ("triggers", ("def", "enabled"))):
        want, got = defs(expected, kind, *fields), defs(final, kind, *fields)
        if kind == "constraints":
            want, got = _loose(want), _loose(got)
        problems += [f"{kind[:-1]} missing: {k[-2]}" for k in sorted(want - got)]
        problems += [f"unexpected {kind[:-1]}: {k[-2]}" for k in sorted(got - want)]
    want, got = defs(expected, "indexes", "def"), defs(final, "indexes", "def")
    problems += [f"index missing: {k[0]}" for k in sorted(want - got)]
    return problems


_CAST = re.compile(r"::[a-z][a-z ]*(\(\d+(,\d+)?\))?(\[\])?")
_PAREN_NUMBER = re.compile(r"\((-?\d+(\.\d+)?)\)")
_DECIMAL = re.compile(r"\b(\d+)\.(\d*?)0*(?!\d)")


def loose_check(definition: str) -> str:
    """A CHECK definition with literal noise removed: casts, parenthesised numbers, zeros.

    PostgreSQL prints ``CHECK (x <= 0.3)`` and ``CHECK (x <= 0.30)`` differently and
    casts literals (``(0)::numeric``); both forms mean the same. Used only to compare
    the definitions of tables in scope with the gold state, never for flags.
    """
    text = _CAST.sub("", definition)
    text = _PAREN_NUMBER.sub(r"\1", text)
    text = _DECIMAL.sub(lambda m: m.group(1) + ("." + m.group(2) if m.group(2) else ""), text)
    return " ".join(text.split())


def _loose(keys: Counter[tuple[Any, ...]]) -> Counter[tuple[Any, ...]]:
    return Counter({(k[0], loose_check(k[1]) if k[0] == "c" else k[1]): n for k, n in keys.items()})


def compare_answers(
    gold: dict[str, Any], answer: dict[str, Any], *, ordered: bool
) -> gym.Component:
    """Gated: the answer's rows equal the gold rows (as a multiset, or a list if ordered).

    Values are compared in canonical form (see runner.py). Column names are ignored and
    columns may come in any order, as long as one order makes the rows match.
    """
    if answer.get("error"):
        return _fail(
            f"the answer query failed on a fresh copy of the database: {answer['error'][:600]}"
        )
    if answer.get("truncated"):
        return _fail("the answer query returned too many rows")
    want_cols, got_cols = len(gold["columns"]), len(answer["columns"])
    if want_cols != got_cols:
        return _fail(
            f"expected {want_cols} columns, the answer has {got_cols} "
            f"({', '.join(answer['columns'])})"
        )
    want, got = gold["rows"], answer["rows"]
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
