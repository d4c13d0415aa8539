"""The importer of SQL datasets: question, gold query and database dump -> SQL tasks.

Each record becomes a read task of a SQL family (``environments.sql``, over a database
of its own) under ``seeds/<family>/``:

- ``task.toml``: ``id``, ``split``, ``kind = "read"``, ``ordered`` (whether the gold
  query's outermost statement has an ORDER BY, `asks_order`), ``tables`` (the tables
  the gold query reads), ``database`` (the name of its dump) and the ``prompt``;
- ``hidden/gold.sql``: the gold query, in PostgreSQL;
- ``seeds/<family>/databases/<name>.sql``: the database, PostgreSQL SQL text, written
  once for every task that shares it (``<name>``: the record's ``database_name`` field,
  such as Spider's ``db_id``, or ``db-`` and the start of the dump's sha256).

A SQLite or MySQL dump and the gold query are converted to PostgreSQL with sqlglot
(`to_postgres`: parsed in the source dialect, identifiers lower-cased and MySQL's table
options dropped on the syntax tree, written as PostgreSQL), never with hand-written
patterns. The dump's
transaction and session statements (``PRAGMA``, ``BEGIN``, ``COMMIT``, ``SET``, table
locks, SQLite's ``sqlite_sequence`` bookkeeping) are left out: the environment loads a
database in a transaction of its own. Each record is checked as it is written (one
query, tables that the database has, a declared split) and its task.toml read back; a
bad record is reported by number and left out.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from gym._core._errors import ConfigError
from gym._core._models import DEFAULT_SPLITS, SplitUse, _load_task, natural_key
from gym._core._tree import confined
from gym._datasets._dataset import MappingFile, SplitRule, _field, _fill, folder_name, read_records
from gym._datasets._importer import ImportResult, write_folder

__all__ = ["SQLMapping", "asks_order", "import_sql", "to_postgres"]

GENERATOR = "boxgym-import-sql/1"
"""Version of the files `import_sql` writes (their header says it)."""
DATABASES = "databases"
"""The folder of shared dumps beside a family's tasks."""
DIALECTS = ("sqlite", "mysql", "postgres", "duckdb", "tsql", "oracle", "bigquery")
"""Source dialects a mapping may name (any sqlglot reads; these are the common ones)."""
_SKIPPED_TABLES = frozenset({"sqlite_sequence", "sqlite_stat1", "sqlite_stat4"})


class SQLMapping(MappingFile):
    """Which record fields hold a SQL task (a ``kind = "sql"`` mapping file)."""

    model_config = ConfigDict(extra="forbid")
    mapping_kind: ClassVar[str | None] = "sql"
    docs_section: ClassVar[str] = "A SQL environment from a dataset"

    kind: str = "sql"
    """Always ``sql`` (what `gym env import --kind sql` reads)."""
    family: str
    """The family: tasks are written under ``<seeds>/<family>/``."""
    id: str = "{id}"
    """Template of the task id (Python format syntax over the record)."""
    prompt: str = "{question}"
    """Template of the prompt: the question the agent answers."""
    gold: str = "query"
    """Field holding the gold query (in `dialect`)."""
    database: str = "database"
    """Field holding the database dump (SQL text in `dialect`), or the name of a dump
    file inside the dataset file's folder (relative, no ``..``: never a host file)."""
    database_name: str = ""
    """Field naming the database (Spider's ``db_id``): records with one name share one
    dump. Empty: named by the dump's content."""
    dialect: str = "sqlite"
    """The SQL dialect of the dumps and gold queries (sqlglot's name)."""
    split: SplitRule = Field(default_factory=SplitRule)
    """How the split is found (``train`` for every record by default)."""
    splits: dict[str, SplitUse] = Field(default_factory=lambda: dict(DEFAULT_SPLITS))
    """The family's splits and their roles."""
    tags: dict[str, str] = Field(default_factory=dict)
    """Tag -> template; every tag is a report slice."""


class SQLTask(BaseModel):
    """One record as a SQL task, converted, before it is written."""

    id: str
    split: str
    prompt: str
    gold: str
    """The gold query in PostgreSQL."""
    ordered: bool
    tables: list[str]
    database: str
    """The name of its dump under ``databases/``."""
    tags: dict[str, str] = Field(default_factory=dict)


# -- conversion ---------------------------------------------------------------------------


def _skipped(statement: Any) -> bool:
    """Whether a dump statement is session or transaction control, or SQLite bookkeeping."""
    from sqlglot import exp

    control = (
        exp.Pragma,
        exp.Transaction,
        exp.Commit,
        exp.Rollback,
        exp.Set,
        exp.Use,
        exp.Semicolon,
    )
    if isinstance(statement, control):  # a lone comment parses as a Semicolon
        return True
    if isinstance(statement, exp.Command):  # LOCK/UNLOCK TABLES and the like
        words = str(statement.this).upper().split()
        return bool(words) and words[0] in {"LOCK", "UNLOCK"}
    target = statement.find(exp.Table)
    return isinstance(statement, exp.Insert | exp.Delete) and (
        target is not None and target.name.lower() in _SKIPPED_TABLES
    )


def _portable(statement: Any) -> Any:
    """A statement with lower-case identifiers and no storage options of its dialect.

    PostgreSQL folds unquoted names to lower case; lower-casing every identifier of a
    dump and of the queries over it (SQLite and MySQL resolve column names whatever
    their case) makes them name the same objects, as plain identifiers. Table options
    that mean nothing to PostgreSQL (MySQL's ENGINE, CHARSET, COLLATE, AUTO_INCREMENT,
    COMMENT) are dropped from the tree.
    """
    from sqlglot import exp

    storage = (
        exp.EngineProperty,
        exp.CharacterSetProperty,
        exp.CollateProperty,
        exp.AutoIncrementProperty,
        exp.SchemaCommentProperty,
        exp.RowFormatProperty,
    )
    for node in list(statement.find_all(exp.Identifier, *storage)):
        if isinstance(node, exp.Identifier):
            node.set("this", node.this.lower())
        else:
            node.pop()
    return statement


def to_postgres(sql: str, dialect: str) -> list[str]:
    """SQL text of ``dialect`` as PostgreSQL statements (sqlglot's transpilation).

    Identifiers become lower case and dialect-only table options go (`_portable`), so a
    dump and the queries over it, converted alike, name the same objects. Session and
    transaction statements are left out (`_skipped`).

    Raises:
        ConfigError: sqlglot cannot parse the text, or a statement has no PostgreSQL form.
    """
    import sqlglot
    import sqlglot.errors

    try:
        statements = sqlglot.parse(sql, read=dialect)
        out = []
        for statement in statements:
            if statement is None or _skipped(statement):
                continue
            tree = _portable(statement)
            out.append(tree.sql(dialect="postgres", unsupported_level=sqlglot.ErrorLevel.RAISE))
    except sqlglot.errors.SqlglotError as exc:
        raise ConfigError(f"not {dialect} SQL that sqlglot can convert: {str(exc)[:300]}") from exc
    return out


def asks_order(query: str) -> bool:
    """Whether a PostgreSQL query's result has an order: its outermost ORDER BY.

    Read with sqlglot, never by matching text: an ORDER BY inside a subquery, a window
    or an aggregate does not order the result. A query sqlglot cannot parse asks for
    no order.
    """
    import sqlglot
    import sqlglot.errors
    from sqlglot import exp

    try:
        statements = [s for s in sqlglot.parse(query, read="postgres") if s is not None]
    except sqlglot.errors.SqlglotError:
        return False
    if not statements:
        return False
    last = statements[-1]
    if isinstance(last, exp.Subquery):  # a parenthesised query: its own ORDER BY orders it
        last = last.unnest()
    return isinstance(last, exp.Query) and last.args.get("order") is not None


def _tables_created(statements: list[str]) -> list[str]:
    """The tables a converted dump creates, in order (lower-cased names)."""
    import sqlglot
    from sqlglot import exp

    names = []
    for text in statements:
        tree = sqlglot.parse_one(text, read="postgres")
        if isinstance(tree, exp.Create) and str(tree.args.get("kind", "")).upper() == "TABLE":
            table = tree.find(exp.Table)
            if table is not None:
                names.append(table.name)
    return names


def _tables_read(query: str) -> list[str]:
    """The tables a PostgreSQL query reads, in order of appearance (CTE names left out)."""
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(query, read="postgres")
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    seen: list[str] = []
    for table in tree.find_all(exp.Table):
        if table.name and table.name not in ctes and table.name not in seen:
            seen.append(table.name)
    return seen


def _gold(query: str, dialect: str) -> str:
    """The gold query in PostgreSQL: exactly one query (a SELECT, a set operation...).

    Raises:
        ConfigError: not one query.
    """
    import sqlglot
    from sqlglot import exp

    statements = to_postgres(query, dialect)
    if len(statements) != 1:
        raise ConfigError(f"gold: {len(statements)} statements; a read task's gold is one query")
    if not isinstance(sqlglot.parse_one(statements[0], read="postgres"), exp.Query):
        raise ConfigError(f"gold: {statements[0][:80]!r} is not a query (SELECT)")
    return statements[0]


# -- records ------------------------------------------------------------------------------


class _Databases:
    """The dumps of one import: converted once per source text, named, kept to write."""

    def __init__(self, mapping: SQLMapping, base: Path) -> None:
        self.mapping = mapping
        self.base = base
        self.converted: dict[str, tuple[str, list[str]]] = {}  # source sha -> text, tables
        self.named: dict[str, str] = {}  # name -> converted text

    def of(self, record: Mapping[str, Any]) -> tuple[str, list[str]]:
        """The name of a record's database and the tables it has (converted, kept)."""
        source = self._source(_field(record, self.mapping.database, "database"))
        key = hashlib.sha256(source.encode()).hexdigest()
        if key not in self.converted:
            statements = to_postgres(source, self.mapping.dialect)
            text = f"-- Converted from {self.mapping.dialect} by {GENERATOR} (sqlglot).\n"
            text += "".join(f"{s};\n" for s in statements)
            self.converted[key] = (text, _tables_created(statements))
        text, tables = self.converted[key]
        name = self._name(record, text)
        if self.named.setdefault(name, text) != text:
            raise ConfigError(f"database {name!r}: another record gave a different dump")
        return name, tables

    def _source(self, value: Any) -> str:
        """The dump's text: the field itself, or the file it names."""
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"database = {str(value)[:60]!r}: no dump (SQL text or a file)")
        one_line = "\n" not in value.strip() and len(value) < 300
        path = self.base / value.strip()
        if one_line and path.suffix in (".sql", ".dump"):
            path = confined(self.base, value.strip(), "database")  # never a host file
            if not path.is_file():
                raise ConfigError(f"database = {value!r}: no such dump file in {self.base}")
            return path.read_text(encoding="utf-8")
        return value

    def _name(self, record: Mapping[str, Any], text: str) -> str:
        if self.mapping.database_name:
            value = str(_field(record, self.mapping.database_name, "database_name"))
            return folder_name(value)
        return "db-" + hashlib.sha256(text.encode()).hexdigest()[:12]


def _task(record: Mapping[str, Any], mapping: SQLMapping, databases: _Databases) -> SQLTask:
    """The task of one record (converted and checked).

    Raises:
        ConfigError: a field is missing or malformed, the split is not declared, or the
            gold query reads a table the database does not have.
    """
    split = mapping.split.split_of(record)
    if split not in mapping.splits:
        raise ConfigError(f"split = {split!r}: not a declared split ({', '.join(mapping.splits)})")
    database, tables = databases.of(record)
    gold = _gold(str(_field(record, mapping.gold, "gold")), mapping.dialect)
    read = _tables_read(gold)
    missing = [t for t in read if t not in tables]
    if missing:
        raise ConfigError(
            f"gold reads {', '.join(missing)}, which database {database!r} does not create "
            f"(it has: {', '.join(tables) or 'no table'})"
        )
    prompt = _fill("prompt", mapping.prompt, record)
    if not prompt.strip():
        raise ConfigError("prompt: empty")
    return SQLTask(
        id=_fill("id", mapping.id, record),
        split=split,
        prompt=prompt,
        gold=gold,
        ordered=asks_order(gold),
        tables=read,
        database=database,
        tags={k: _fill(f"tags.{k}", v, record) for k, v in mapping.tags.items()},
    )


def _toml(value: Any) -> str:
    """A TOML value (JSON's strings, booleans and arrays of strings are valid TOML)."""
    return json.dumps(value, ensure_ascii=False)


def task_files(task: SQLTask, origin: str) -> dict[str, bytes]:
    """The files of one task's folder (its database is written apart, once)."""
    lines = [
        f"# Generated by boxgym's importer ({GENERATOR}) from {origin}.\n",
        f"id = {_toml(task.id)}\n",
        f"split = {_toml(task.split)}\n",
        'kind = "read"\n',
        f"ordered = {_toml(task.ordered)}\n",
        f"tables = {_toml(task.tables)}\n",
        f"database = {_toml(task.database)}\n",
        f"prompt = {_toml(task.prompt)}\n",
    ]
    if task.tags:
        lines.append("\n[tags]\n")
        lines += [f"{_toml(k)} = {_toml(v)}\n" for k, v in task.tags.items()]
    return {"task.toml": "".join(lines).encode(), "hidden/gold.sql": (task.gold + "\n").encode()}


def import_sql(
    source: Path | Iterable[Mapping[str, Any]],
    mapping: SQLMapping,
    seeds: Path,
    *,
    fmt: str | None = None,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    base: Path | None = None,
) -> ImportResult:
    """Write one read task per record, and each database once, under ``seeds/<family>/``.

    Args:
        source: a JSONL, JSON or CSV file (`read_records`), or the records themselves.
        mapping: which fields hold what, and the source dialect.
        seeds: the seeds folder.
        fmt: the file's format (by default from its suffix).
        limit: only the first N records.
        progress: called with (records done, records in all).
        base: the folder that dump file names are relative to (by default the dataset
            file's folder, or the current folder for records given as such).

    Returns:
        What was written, and one line per record refused.
    """
    path = Path(source) if isinstance(source, str | Path) else None
    if path is not None:
        records = read_records(path, fmt)
    else:
        assert not isinstance(source, str | Path)
        records = [dict(r) for r in source]
    records = records[:limit] if limit else records
    origin = path.name if path is not None else "records"
    folder = Path(seeds) / mapping.family
    result = ImportResult(family=mapping.family, folder=str(folder), layout="folders")
    databases = _Databases(mapping, base or (path.parent if path is not None else Path.cwd()))
    built: list[tuple[int, SQLTask]] = []
    for number, record in enumerate(records, start=1):
        try:
            task = _task(record, mapping, databases)
            if any(task.id == t.id or folder_name(task.id) == folder_name(t.id) for _, t in built):
                raise ConfigError(f"id = {task.id!r}: the folder of an earlier record's task")
            built.append((number, task))
        except ConfigError as exc:
            result.problems.append(f"{origin} record {number}: {exc}")
        if progress:
            progress(number, len(records))
    _write_databases(folder, {t.database for _, t in built}, databases.named)
    for number, task in built:
        target = folder / folder_name(task.id)
        write_folder(target, task_files(task, f"{origin} record {number}"))
        try:
            _load_task(mapping.family, target, mapping.splits)
        except ConfigError as exc:
            result.problems.append(f"{origin} record {number}: {exc}")
            continue
        result.written.append(task.id)
        result.splits[task.split] = result.splits.get(task.split, 0) + 1
    result.written.sort(key=natural_key)
    return result


def _write_databases(folder: Path, names: set[str], texts: Mapping[str, str]) -> None:
    target = folder / DATABASES
    target.mkdir(parents=True, exist_ok=True)
    for name in sorted(names):
        file = target / f"{name}.sql"
        data = texts[name].encode()
        if not file.is_file() or file.read_bytes() != data:
            tmp = file.with_name(f".{file.name}.tmp")
            tmp.write_bytes(data)
            tmp.replace(file)
