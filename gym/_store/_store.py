"""The run store: SQLite under trajectories/ by default, any SQLAlchemy URL otherwise."""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from sqlalchemy import and_, case, event, func, inspect, text
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import (
    ArgumentError,
    DBAPIError,
    IntegrityError,
    OperationalError,
    SQLAlchemyError,
)
from sqlmodel import Session, SQLModel, col, create_engine, delete, select

from gym._core._errors import ConfigError, StoreError, StoreUnavailable
from gym._core._paths import data_dir
from gym._core._tools import ToolCall
from gym._store._lineage import LineageRow
from gym._store._models import (
    EpisodeRow,
    RunOwnerRow,
    RunRow,
    RunState,
    RunStatus,
    RunStatusRow,
    StepRow,
    TrainStepRow,
    TurnsRow,
    ValidationRow,
    VerdictRow,
)

__all__ = [
    "COMMIT_TRIES",
    "HEARTBEAT_S",
    "PG_CONNECT_DEFAULTS",
    "STALE_AFTER_S",
    "LeaseLost",
    "RunBusy",
    "Store",
    "calls_of",
    "default_url",
]

HEARTBEAT_S = 10.0
"""How often a running `gym run` refreshes its run's heartbeat (episode commits do too)."""
STALE_AFTER_S = 60.0
"""A run that says running but has not beaten for this long is shown ``interrupted``
(``GYM_RUN_STALE_S`` or `Store`'s ``stale_after`` change it)."""

PG_CONNECT_DEFAULTS: dict[str, int] = {
    "connect_timeout": 10,
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
    "tcp_user_timeout": 60_000,
}
"""libpq settings of every PostgreSQL connection, unless its URL sets them (the URL's
value wins, as ``?connect_timeout=30``): a server that does not answer fails the open in
10 s, and a connection whose peer went silent is dropped in about a minute, by keepalives
while it is idle and by ``tcp_user_timeout`` (ms) while bytes sent wait unacknowledged,
instead of hanging the run. No ``statement_timeout``: a report or a deletion over a large
run, and a wait for another process's write lock, may rightly take minutes; a dead peer
is what hangs, and these settings end that."""

COMMIT_TRIES = 4
"""How often an episode's commit is tried when the database fails in a way that may pass
(the connection dropped, a serialization failure, a busy SQLite file): backoff between
tries of about 0.5, 1 and 2 s; then `StoreUnavailable`."""
_BACKOFF_S = 0.5

_PG_TRANSIENT = ("40001", "40P01", "57P01", "57P02", "57P03")
"""SQLSTATEs that may pass: serialization failure, deadlock, the backend terminated or
the server shutting down or starting (and class 08, connection exceptions)."""
_PG_REFUSED = ("authentication failed", "does not exist", "no pg_hba.conf", "no password")
"""A server that answered and refused the URL's user or database: the URL is wrong."""

_T = TypeVar("_T")
_Row = TypeVar("_Row", bound=SQLModel)


class RunBusy(StoreError):
    """Another live process holds the run (its heartbeat is fresh): it is not started twice."""


class LeaseLost(StoreError):
    """Another process took the run over (this one had stopped beating): this one stops."""

    exit_code: ClassVar[int] = 1
    """A failure of the run, not of its command."""


def _transient(exc: BaseException) -> bool:
    """Whether a database error may pass when the work is tried again.

    The connection dropped or could not be made (the server down, restarting or not
    answering), a serialization failure or deadlock, a busy or locked SQLite file. Not a
    server that answered and refused the URL's user or database, nor any other error.
    """
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    orig = getattr(exc, "orig", None)
    if isinstance(orig, sqlite3.OperationalError):
        return orig.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    state = getattr(orig, "sqlstate", None)
    if state:
        return str(state).startswith("08") or state in _PG_TRANSIENT
    client_side = type(orig).__module__.startswith("psycopg")  # no SQLSTATE: not the server's
    said = str(orig)
    return isinstance(exc, OperationalError) and client_side and not _said_any(said, _PG_REFUSED)


def _said_any(said: str, words: Sequence[str]) -> bool:
    return any(w in said for w in words)


@dataclass
class _Try:
    """One try of a retried write: its number, and whether its COMMIT was sent."""

    number: int
    committing: bool = False


def _retried(write: Callable[[_Try], _T], *, recommit: bool) -> _T:
    """Run ``write`` again, after a backoff, while it fails with `StoreUnavailable`.

    Args:
        write: one try, in one transaction; it sets ``committing`` before its COMMIT.
        recommit: whether a try whose COMMIT was sent may be tried again: the server
            may have committed it before the connection dropped, so only a write that
            finds its own earlier try (and does not repeat it) may.

    Raises:
        StoreUnavailable: the last of `COMMIT_TRIES` tries failed so, or a try failed
            after its COMMIT was sent (and not ``recommit``).
    """
    attempt = _Try(1)
    while True:
        try:
            return write(attempt)
        except StoreUnavailable as exc:
            if attempt.committing and not recommit:
                raise
            if attempt.number >= COMMIT_TRIES:
                raise StoreUnavailable(f"{exc} ({attempt.number} tries)") from exc.__cause__
        time.sleep(_BACKOFF_S * 2 ** (attempt.number - 1) * (0.5 + random.random()))
        attempt = _Try(attempt.number + 1)


def _fresh(row: _Row) -> _Row:
    """A copy of a row that no session holds (a failed try leaves its rows bound to it)."""
    return type(row)(**row.model_dump())


def _connect_args(url: str) -> dict[str, Any]:
    """`PG_CONNECT_DEFAULTS` a libpq URL does not set (none for another database)."""
    parsed = make_url(url)
    libpq = parsed.get_driver_name() in ("psycopg", "psycopg2")
    if parsed.get_backend_name() != "postgresql" or not libpq:
        return {}
    return {k: v for k, v in PG_CONNECT_DEFAULTS.items() if k not in parsed.query}


def _owner() -> str:
    """This process as its containers' ``boxgym.owner`` label says it: host:pid:start-time."""
    from gym._sandbox._engine import owner_label  # docker's import: only when writing

    return owner_label()


def _gone(owner: str) -> bool:
    """Whether the process an owner label names has ended (known on its own host only)."""
    from gym._sandbox._engine import owner_alive

    return owner_alive(owner) is False


def _lock(conn: Connection, key: str) -> None:
    """Begin ``conn``'s transaction holding a write lock; another process taking it waits.

    SQLite: the whole database's (``BEGIN IMMEDIATE``, so what the transaction reads
    cannot change before it writes); PostgreSQL: an advisory lock on ``key``, released
    at commit or rollback.
    """
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    elif conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": key})


def _create_schema(engine: Engine) -> None:
    """Create the tables a store lacks, under the write lock.

    Processes opening a new store at once would each find a table missing and create it,
    all but one failing (``table runs already exists``); under the lock the others wait,
    then find every table there.
    """
    with engine.connect() as conn:
        _lock(conn, "boxgym schema")
        SQLModel.metadata.create_all(conn)
        conn.commit()


def default_url() -> str:
    """``GYM_DB_URL`` if set, else a SQLite file under trajectories/."""
    return os.environ.get("GYM_DB_URL") or f"sqlite:///{data_dir() / 'runs.db'}"


def _normalise(url: str) -> str:
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def _sqlite_pragmas(engine: Engine, *, read_only: bool = False) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA busy_timeout=30000")  # first: the pragmas below may wait too
        if read_only:
            cur.execute("PRAGMA query_only=ON")
        else:
            _write_ahead(cur)
            cur.execute("PRAGMA synchronous=FULL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()


def _write_ahead(cur: Any) -> None:
    """Put a SQLite file in WAL mode, waiting out other processes opening it at once.

    Switching a new file to WAL takes its exclusive lock; two connections doing it at
    once can each hold the shared lock the other must wait for, and SQLite then answers
    "database is locked" at once, without its busy timeout (3 processes opening a new
    store: 1 of them failed in a CI run). Such a lock is let go in milliseconds.
    """
    deadline = time.monotonic() + 30
    while True:
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.01 + random.random() * 0.04)


def _sqlite_file(url: str) -> str | None:
    """The file a SQLite URL names (None: not SQLite, in memory, or a ``file:`` URI)."""
    parsed = make_url(url)
    path = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or path in ("", ":memory:"):
        return None
    return None if path.startswith("file:") or parsed.query.get("uri") else path


def _in_memory(url: str) -> bool:
    """A SQLite URL without a file.

    ``sqlite://``, ``sqlite:///``, ``:memory:``, and as a URI (``uri=true``):
    ``file::memory:``, or any ``file:`` name with ``mode=memory``.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return False
    name = (parsed.database or "").removeprefix("file:")
    return name in ("", ":memory:") or parsed.query.get("mode") == "memory"


def _stale_after() -> float:
    """``GYM_RUN_STALE_S`` (seconds, positive), else `STALE_AFTER_S`.

    Raises:
        ConfigError: the variable is set to something else.
    """
    raw = os.environ.get("GYM_RUN_STALE_S") or ""
    try:
        value = float(raw) if raw else STALE_AFTER_S
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ConfigError(f"GYM_RUN_STALE_S={raw!r}: give a number of seconds above 0, or unset it")
    return value


def _prepare_file(path: str) -> None:
    """Make the folder of a SQLite store to be written (as ``--out`` options do).

    Raises:
        StoreError: the path is a folder, or its folder cannot be made.
    """
    if os.path.isdir(path):
        raise StoreError(f"{path} is a folder, not a file; pass --db a file path")
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot make the folder of the run store {path}: {exc.strerror}") from exc


def _reason(exc: BaseException) -> str:
    """The database's own words for an error, on one line (no SQL, no links)."""
    orig = getattr(exc, "orig", None)
    said = str(orig if orig is not None else exc).strip()
    return said.splitlines()[0] if said else type(exc).__name__


def _not_a_store(reason: str) -> bool:
    """Whether a database error says the database is no run store (not a failure of one).

    Every store has held runs and episodes from the first: a table added later missing
    is an older store, not another database.
    """
    missing = ("no such table: {}", 'relation "{}" does not exist')  # SQLite, PostgreSQL
    return reason == "file is not a database" or any(
        reason == said.format(table) for said in missing for table in ("runs", "episodes")
    )


_SNAPSHOT_WRITE = (
    "the run store is being read in a snapshot (`Store.snapshot`): it is for reads; "
    "write once it has ended"
)


def _begin_snapshot(s: Session) -> None:
    """Begin ``s``'s transaction as a snapshot and take it now (its first read does).

    SQLite: an explicit deferred ``BEGIN`` (the driver begins none before a read); other
    databases: ``REPEATABLE READ``.
    """
    dialect = s.get_bind().dialect.name
    if dialect == "sqlite":
        conn = s.connection()
        conn.exec_driver_sql("BEGIN")
        conn.exec_driver_sql("SELECT count(*) FROM sqlite_master")
        return
    # No ``postgresql_readonly``: putting it back on the pooled connection sets READ WRITE,
    # which undid a read-only store's ``default_transaction_read_only``; the snapshot's
    # session refuses writes itself (`_refuse_writes`).
    options: dict[str, Any] = {"isolation_level": "REPEATABLE READ"}
    s.connection(execution_options=options).exec_driver_sql("SELECT 1")


def _refuse_writes(s: Session) -> None:
    """Make ``s`` raise `StoreError` on a flush, a commit or an ORM insert, update, delete."""

    def refuse(*_args: Any) -> None:
        raise StoreError(_SNAPSHOT_WRITE)

    def refuse_dml(state: Any) -> None:
        if state.is_insert or state.is_update or state.is_delete:
            refuse()

    event.listen(s, "before_flush", refuse)
    event.listen(s, "before_commit", refuse)
    event.listen(s, "do_orm_execute", refuse_dml)


def _unwritable(path: str) -> str | None:
    """The URL that reads a SQLite file in a folder this process cannot write; else None.

    A reader of a store in WAL mode makes its shared-memory file beside it, so a store on
    read-only media (a share, a mounted archive) could not even be listed. In a folder no
    writer can change, the file is read as immutable (SQLite's ``immutable=1``): what the
    last writer checkpointed, which a store closed cleanly holds whole.
    """
    folder = os.path.dirname(os.path.abspath(path))
    if os.access(folder, os.W_OK):
        return None
    return (
        f"sqlite:///file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro&immutable=1&uri=true"
    )


def _read_only_engine(url: str) -> Engine:
    """An engine whose connections refuse writes (SQLite query_only, PostgreSQL read-only).

    An empty file is no store either (as a missing one): nothing was ever written to it.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = parsed.database or ""
        if path in ("", ":memory:") or not os.path.isfile(path) or not os.path.getsize(path):
            raise StoreError(f"no run store at {path or url!r}: `gym run` creates one")
        engine = create_engine(_unwritable(path) or url, pool_pre_ping=True)
        _sqlite_pragmas(engine, read_only=True)
        return engine
    args = {"options": "-c default_transaction_read_only=on", **_connect_args(url)}
    return create_engine(url, pool_pre_ping=True, connect_args=args)


class Store:
    """Runs, episodes, steps and verdicts in a SQL database.

    Every episode is written in one transaction with its steps and verdict, so a crash
    leaves either the whole episode or nothing.

    Args:
        url: SQLAlchemy URL (``sqlite:///path.db``, ``postgresql://user@host/db``);
            ``GYM_DB_URL`` or trajectories/runs.db by default.
        read_only: open an existing store for reading only: no table is created and
            the database refuses every write (viewers use this).
        stale_after: seconds without a heartbeat after which a running run is shown
            ``interrupted``; ``GYM_RUN_STALE_S`` or `STALE_AFTER_S` by default.
    """

    def __init__(
        self, url: str | None = None, *, read_only: bool = False, stale_after: float | None = None
    ) -> None:
        self.url = url or default_url()
        self.stale_after = stale_after or _stale_after()
        self._has_status = not read_only  # a read-write open creates the table
        self._has_turns = not read_only  # and this one
        self._has_lineage = not read_only  # and this one
        self._snap = threading.local()  # .session: this thread's open `snapshot`
        try:
            if read_only:
                self.engine = _read_only_engine(_normalise(self.url))
                return
            if (path := _sqlite_file(_normalise(self.url))) is not None:
                _prepare_file(path)
            elif _in_memory(self.url):
                raise StoreError(
                    f"{self.url!r} is a SQLite store in memory: every episode would be lost "
                    "when the process ends; name a file (sqlite:///runs.db)"
                )
            url = _normalise(self.url)
            self.engine = create_engine(url, pool_pre_ping=True, connect_args=_connect_args(url))
            if self.engine.dialect.name == "sqlite":
                _sqlite_pragmas(self.engine)
            _create_schema(self.engine)
        except (SQLAlchemyError, ImportError) as exc:
            raise self._error(exc, "cannot open the run store at {url}: {reason}") from exc

    def _error(self, exc: BaseException, template: str) -> StoreError:
        """A one-line `StoreError` for a database error (``template`` has {url}, {reason}).

        `StoreUnavailable` when the error may pass (`_transient`): its message says what
        to check, and that the same command run again resumes the run.
        """
        url, reason = self._safe_url(), _reason(exc)
        if _not_a_store(reason):
            return StoreError(
                f"{url} is not a boxgym run store ({reason}); "
                "pass --db a store made by gym run, or a new path"
            )
        said = template.format(url=url, reason=reason)
        if not _transient(exc):
            return StoreError(said)
        if self.url.startswith("sqlite"):
            check = "another process holds the store's lock: wait until it is done"
        else:
            check = "check that the database server is up and that the URL names it"
        return StoreUnavailable(
            f"{said}; {check}, then run the same command again (a run resumes where it stopped)"
        )

    def _safe_url(self) -> str:
        """The URL with its password hidden (for messages)."""
        try:
            return make_url(self.url).render_as_string(hide_password=True)
        except (ArgumentError, ValueError):  # unreadable: show only what follows any "@"
            return "***@" + self.url.rsplit("@", 1)[1] if "@" in self.url else self.url

    @contextlib.contextmanager
    def session(self) -> Iterator[Session]:
        """A session; errors become `StoreError`.

        Inside `snapshot` (in the same thread) it is the snapshot's session, whose rows
        are handed out detached as a session of their own leaves them, and which refuses
        writes.
        """
        try:
            if (snap := self._snapshot_session()) is not None:
                try:
                    yield snap
                finally:
                    snap.expunge_all()  # as a closed session: later reads load afresh
                return
            with Session(self.engine, expire_on_commit=False) as session:
                yield session
        except SQLAlchemyError as exc:
            raise self._error(exc, "run store error ({url}): {reason}") from exc

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """Read the store as of one moment, in one read transaction.

        Every read of this `Store` in this thread inside the block uses it: commits other
        processes make meanwhile are not seen until the block ends (SQLite: one deferred
        transaction, stable in WAL mode; PostgreSQL: ``REPEATABLE READ``). A
        snapshot opened inside another is the same snapshot.

        Raises:
            StoreError: a write of this `Store` in this thread inside the block.
        """
        if self._snapshot_session() is not None:
            yield
            return
        with self.session() as s:
            _begin_snapshot(s)
            _refuse_writes(s)
            self._snap.session = s
            try:
                yield
            finally:
                self._snap.session = None

    def _snapshot_session(self) -> Session | None:
        """The session of the `snapshot` open in this thread (None: none is)."""
        snap: Session | None = getattr(self._snap, "session", None)
        return snap

    @contextlib.contextmanager
    def _writing(self) -> Iterator[Session]:
        """A session to write in.

        Raises:
            StoreError: a `snapshot` is open in this thread.
        """
        if self._snapshot_session() is not None:
            raise StoreError(_SNAPSHOT_WRITE)
        with self.session() as s:
            yield s

    @contextlib.contextmanager
    def _locked(self, key: str) -> Iterator[Session]:
        """A session whose transaction holds the write lock from its start (see `_lock`)."""
        with self._writing() as s:
            _lock(s.connection(), key)
            yield s

    def _has_table(self, name: str) -> bool:
        """Whether the store holds a table; errors become `StoreError`."""
        try:
            return inspect(self.engine).has_table(name)
        except SQLAlchemyError as exc:
            raise self._error(exc, "run store error ({url}): {reason}") from exc

    def close(self) -> None:
        """Release the database connections."""
        self.engine.dispose()

    # -- runs ------------------------------------------------------------------------

    def ensure_run(self, run: RunRow) -> RunRow:
        """Insert a run unless one with its id exists; return the stored run."""
        with self._writing() as s:
            found = s.get(RunRow, run.id)
            if found is not None:
                return found
            s.add(run)
            s.commit()
            return run

    def runs(self) -> list[RunRow]:
        """Every run, newest first."""
        with self.session() as s:
            return list(s.exec(select(RunRow).order_by(col(RunRow.created_at).desc())))

    def run(self, run_id: str) -> RunRow:
        """A run by id or unique id prefix.

        Raises:
            StoreError: no run, or several, match.
        """
        with self.session() as s:
            found = list(s.exec(select(RunRow).where(col(RunRow.id).startswith(run_id))))
        if not found:
            raise StoreError(
                f"no run matching {run_id!r} in {self._safe_url()} (`gym runs` lists them)"
            )
        if len(found) > 1:
            listed = ", ".join(sorted(r.id + (f" ({r.label})" if r.label else "") for r in found))
            raise StoreError(
                f"{len(found)} runs matching {run_id!r} in {self._safe_url()}: {listed}; "
                "give more of the id"
            )
        return found[0]

    # -- run status ------------------------------------------------------------------

    def start_run(self, run: RunRow, planned: int, *, owner: str | None = None) -> RunRow:
        """Store a run (unless stored), mark it running with ``planned`` episodes, hold it.

        A run started again (a resume) goes back to running with the new planned count,
        and takes ``run``'s label if it has one.
        The calling process (``owner``, this one's ``boxgym.owner`` label by default)
        claims the run in the same transaction, taking it over from a holder whose
        heartbeat is stale or whose process is gone (on this host).

        Raises:
            RunBusy: another process holds the run and its heartbeat is fresh.
        """
        me, now = owner or _owner(), time.time()
        with self._locked(f"run:{run.id}") as s:
            status = s.get(RunStatusRow, run.id)
            holder = s.get(RunOwnerRow, run.id)
            if status is not None:
                self._refuse_if_held(run.id, status, holder.owner if holder else "", me)
            stored = s.get(RunRow, run.id)
            if stored is None:
                stored = run
            elif run.label:  # a resume given a label renames the run (an empty one keeps it)
                stored.label = run.label
            stored.updated_at = now
            s.add(stored)
            s.flush()
            status = RunStatusRow(
                run_id=run.id, state="running", planned=planned, started_at=now, updated_at=now
            )
            s.merge(status)  # a resume replaces the stored state (detail, ended_at cleared)
            s.merge(RunOwnerRow(run_id=run.id, owner=me, claimed_at=now))
            s.commit()
            return stored

    def _refuse_if_held(self, run_id: str, status: RunStatusRow, holder: str, me: str) -> None:
        """Raise `RunBusy` while another live process holds a running run."""
        age = time.time() - status.updated_at
        if status.state != "running" or age > self.stale_after or holder == me:
            return
        if holder and _gone(holder):
            return  # its process ended on this host: no need to wait for the beat to age
        raise RunBusy(
            f"run {run_id} is running now in another process "
            f"({holder or 'an older boxgym'}; heartbeat {age:.0f} s ago): stop it first, or "
            f"run the same command again once it has not beaten for {self.stale_after:.0f} s "
            "(`gym runs` shows it interrupted) to take it over"
        )

    def _check_held(self, s: Session, run_id: str, me: str | None) -> None:
        """Raise `LeaseLost` when another process has taken the run over.

        ``me``: the process asking (None: this one). A run no process claimed is held by none.
        """
        holder = s.get(RunOwnerRow, run_id)
        if holder is not None and holder.owner != (me or _owner()):
            raise LeaseLost(
                f"run {run_id} was taken over by another process ({holder.owner}) after this "
                "one stopped beating: this one stops; the episodes it committed are kept"
            )

    def heartbeat(self, run_id: str, *, owner: str | None = None) -> None:
        """Say that the run's process is alive (a running run only).

        Raises:
            LeaseLost: another process holds the run now (``owner``: this one by default).
        """
        me = owner or _owner()
        with self._writing() as s:
            self._check_held(s, run_id, me)
            status = s.get(RunStatusRow, run_id)
            if status is not None and status.state == "running":
                status.updated_at = time.time()
                s.add(status)
                s.commit()

    def end_run(
        self, run_id: str, state: RunState, detail: str = "", *, owner: str | None = None
    ) -> None:
        """Record how a run ended: ``finished``, ``stopped`` (detail: who) or ``failed``.

        Raises:
            LeaseLost: another process holds the run now (``owner``: this one by default).
        """
        me, now = owner or _owner(), time.time()
        with self._writing() as s:
            self._check_held(s, run_id, me)
            status = s.get(RunStatusRow, run_id)
            run = s.get(RunRow, run_id)
            if status is None or run is None:
                return
            status.state, status.detail = state, detail[:500]
            status.updated_at = status.ended_at = now
            run.updated_at = now  # the run changed: pages computed from it are stale
            s.add_all([status, run])
            s.commit()

    def run_status(self, run_id: str) -> RunStatus:
        """The status of a run (by id or unique prefix)."""
        run = self.run(run_id)
        return self._statuses(run.id)[run.id]

    def run_statuses(self) -> dict[str, RunStatus]:
        """Run id -> status, for every run (two queries)."""
        return self._statuses(None)

    def _statuses(self, run_id: str | None) -> dict[str, RunStatus]:
        counts = select(EpisodeRow.run_id, func.count()).group_by(col(EpisodeRow.run_id))
        runs = select(RunRow.id, RunRow.updated_at)
        if run_id is not None:
            counts = counts.where(EpisodeRow.run_id == run_id)
            runs = runs.where(RunRow.id == run_id)
        with self.session() as s:
            episodes = dict(s.exec(counts).all())
            rows = {r.run_id: r for r in self._status_rows(s, run_id)}
            return {
                rid: self._status(rid, rows.get(rid), episodes.get(rid, 0), updated)
                for rid, updated in s.exec(runs)
            }

    def _status_rows(self, s: Session, run_id: str | None) -> list[RunStatusRow]:
        """The stored status rows (none in a store written before they existed)."""
        if not self._has_status:
            self._has_status = self._has_table(RunStatusRow.__tablename__)
            if not self._has_status:
                return []
        query = select(RunStatusRow)
        if run_id is not None:
            query = query.where(RunStatusRow.run_id == run_id)
        return list(s.exec(query))

    def _status(
        self, run_id: str, row: RunStatusRow | None, episodes: int, updated_at: float
    ) -> RunStatus:
        if row is None:  # run by a boxgym that kept no status: say only what is known
            return RunStatus(
                run_id=run_id,
                state="finished",
                planned=0,
                episodes=episodes,
                detail="status not recorded",
                updated_at=updated_at,
                ended_at=None,
            )
        state = row.state
        if state == "running" and time.time() - row.updated_at > self.stale_after:
            state = "interrupted"
        return RunStatus(
            run_id=run_id,
            state=state,  # type: ignore[arg-type]  # written from RunState only
            planned=row.planned,
            episodes=episodes,
            detail=row.detail,
            updated_at=row.updated_at,
            ended_at=row.ended_at,
        )

    def delete_runs(
        self, run_ids: Sequence[str], *, force: bool = False, dry_run: bool = False
    ) -> dict[str, int]:
        """Delete runs (exact ids) with their episodes, steps, verdicts and train steps.

        All in one transaction: either every row of every run goes, or none.

        Args:
            run_ids: the runs.
            force: also delete a run whose process is running now (fresh heartbeat).
            dry_run: count what would go, then roll back (nothing is deleted).

        Returns:
            Table name -> rows deleted.

        Raises:
            ConfigError: a run is running now (and not ``force``).
            StoreError: a run is not in the store, or the database failed.
        """
        ids = list(dict.fromkeys(run_ids))
        statuses = {rid: self.run_status(rid) for rid in ids}
        running = [rid for rid, st in statuses.items() if st.state == "running"]
        if running and not force:
            raise ConfigError(
                f"run {', '.join(running)} is running now (its heartbeat is fresh): stop it "
                "first, or force the deletion (`gym runs rm --force`)"
            )
        return self._delete(ids, dry_run=dry_run)

    def _delete(self, ids: list[str], *, dry_run: bool) -> dict[str, int]:
        episodes = select(EpisodeRow.id).where(col(EpisodeRow.run_id).in_(ids))
        deletes: list[tuple[str, Any]] = [
            ("verdicts", delete(VerdictRow).where(col(VerdictRow.episode_id).in_(episodes))),
            ("steps", delete(StepRow).where(col(StepRow.episode_id).in_(episodes))),
            ("episode_turns", delete(TurnsRow).where(col(TurnsRow.episode_id).in_(episodes))),
            (
                "episode_lineage",
                delete(LineageRow).where(col(LineageRow.episode_id).in_(episodes)),
            ),
            ("episodes", delete(EpisodeRow).where(col(EpisodeRow.run_id).in_(ids))),
            ("train_steps", delete(TrainStepRow).where(col(TrainStepRow.run_id).in_(ids))),
            ("run_status", delete(RunStatusRow).where(col(RunStatusRow.run_id).in_(ids))),
            ("run_owner", delete(RunOwnerRow).where(col(RunOwnerRow.run_id).in_(ids))),
            ("runs", delete(RunRow).where(col(RunRow.id).in_(ids))),
        ]
        counts: dict[str, int] = {}
        with self._locked("runs:delete") as s:
            # PostgreSQL: a commit of their episodes in flight is waited for, and one that
            # comes later waits (`_live_run`), then finds its run gone. SQLite: the whole
            # file is held from the start (`_lock`).
            s.exec(select(RunRow.id).where(col(RunRow.id).in_(ids)).with_for_update())
            try:
                for table, statement in deletes:
                    counts[table] = s.exec(statement).rowcount
            except IntegrityError as exc:
                s.rollback()
                raise self._referenced(ids) from exc
            if dry_run:
                s.rollback()
            else:
                s.commit()
        return counts

    def _referenced(self, ids: list[str]) -> StoreError:
        """Why runs could not be deleted (nothing was).

        Rows of a table that is not boxgym's refer to them, or (none) rows of them were
        written while they were deleted.
        """
        named = ", ".join(ids)
        others = self._foreign_tables()
        if others:
            return StoreError(
                f"run {named} is referred to by table {', '.join(others)}, which is not "
                "boxgym's: delete its rows that name the run first, then `gym runs rm` "
                "again; nothing was deleted"
            )
        return RunBusy(
            f"run {named} was being written while it was deleted: stop the run first "
            "(`gym runs` shows it stopped or interrupted), then `gym runs rm` again; "
            "nothing was deleted"
        )

    def _foreign_tables(self) -> list[str]:
        """The tables not boxgym's with a foreign key to its runs or episodes."""
        ours = set(SQLModel.metadata.tables)
        try:
            found = inspect(self.engine)
            return sorted(
                table
                for table in found.get_table_names()
                if table not in ours
                and any(
                    k["referred_table"] in ("runs", "episodes")
                    for k in found.get_foreign_keys(table)
                )
            )
        except SQLAlchemyError as exc:
            raise self._error(exc, "run store error ({url}): {reason}") from exc

    # -- episodes --------------------------------------------------------------------

    def episode_outcomes(self, run_id: str) -> dict[str, str]:
        """Episode id -> outcome of every committed episode of a run."""
        with self.session() as s:
            rows = s.exec(
                select(EpisodeRow.id, EpisodeRow.outcome).where(EpisodeRow.run_id == run_id)
            )
            return dict(rows.all())

    def commit_episode(
        self,
        episode: EpisodeRow,
        steps: Sequence[StepRow],
        verdict: VerdictRow | None,
        turns: TurnsRow | None = None,
        lineage: LineageRow | None = None,
        *,
        owner: str | None = None,
    ) -> bool:
        """Write an episode with its steps, verdict and turns in one transaction.

        The first commit of an episode wins: one stored with the same id is kept, unless
        it is an infra error (``--retry-infra`` reruns it) or a branch whose parent is not
        stored (a resumed training step grows the tree again). Those are replaced in the
        same transaction, so no episode is ever duplicated. A run held by another process
        (`start_run` took it over) refuses the commit: the process that lost it writes
        nothing more, even before its next heartbeat would tell it. A commit that fails in
        a way that may pass (the connection dropped, a serialization failure, a busy
        SQLite file) is tried again, `COMMIT_TRIES` tries in all.

        Args:
            episode: the episode.
            steps: its steps, in order.
            verdict: its verdict (None when grading produced none).
            turns: its tools and user turns (None: none recorded; it reads back as
                `TurnsRow.empty`).
            lineage: its parent and fork step, for a forked episode (None: it began at
                a reset).

            owner: the committing process (this one's ``boxgym.owner`` label by default).

        Returns:
            Whether it was written (False: the stored one was kept).

        Raises:
            LeaseLost: another process holds the run now, or the run was deleted; nothing
                was written.
            StoreUnavailable: the database could not be reached, on every try.
        """
        # A try again duplicates nothing: each try is one transaction (all of its rows or
        # none), the episode id is the key of the episode, its turns and its lineage, and
        # its steps and verdicts are deleted by episode id before they are written. A try
        # whose COMMIT reached the server before the connection dropped left the episode
        # stored: the next try finds it, this same attempt, and writes nothing more.
        rows = _EpisodeRows(episode, steps, verdict, turns, lineage)
        return _retried(lambda t: self._commit_try(t, rows, owner), recommit=True)

    def _commit_try(self, t: _Try, rows: _EpisodeRows, owner: str | None) -> bool:
        """One try of `commit_episode`, on fresh copies of its rows."""
        episode = _fresh(rows.episode)
        with self._locked(f"episode:{episode.id}") as s:
            self._check_held(s, episode.run_id, owner)  # a run nobody claimed takes any
            run = self._live_run(s, episode.run_id)
            old = s.get(EpisodeRow, episode.id)
            if old is not None and t.number > 1 and _same_attempt(old, episode):
                return True  # an earlier try committed it, then its connection dropped
            if old is not None and not self._replaceable(s, old):
                return False
            self._write_episode(s, episode, rows, old)
            run.updated_at = time.time()
            s.add(run)
            status = s.get(RunStatusRow, episode.run_id) if self._has_status else None
            if status is not None and status.state == "running":
                status.updated_at = time.time()  # a commit is a heartbeat too
                s.add(status)
            t.committing = True
            s.commit()
            return True

    def _live_run(self, s: Session, run_id: str) -> RunRow:
        """The run an episode is committed to, kept from deletion until the commit ends.

        PostgreSQL: its row locked FOR KEY SHARE (as the episode's foreign key would), so
        a `delete_runs` in flight is waited for, then seen.

        Raises:
            LeaseLost: the run was deleted (``gym runs rm --force``) while it ran.
        """
        run = s.get(RunRow, run_id, with_for_update={"key_share": True})
        if run is None:
            raise LeaseLost(
                f"run {run_id} was deleted (`gym runs rm --force`) while this process ran "
                "it: this one stops and writes nothing more"
            )
        return run

    @staticmethod
    def _write_episode(
        s: Session, episode: EpisodeRow, rows: _EpisodeRows, old: EpisodeRow | None
    ) -> None:
        """Replace whatever is stored of an episode by its rows (one transaction's part)."""
        s.exec(delete(StepRow).where(col(StepRow.episode_id) == episode.id))
        s.exec(delete(VerdictRow).where(col(VerdictRow.episode_id) == episode.id))
        s.exec(delete(TurnsRow).where(col(TurnsRow.episode_id) == episode.id))
        s.exec(delete(LineageRow).where(col(LineageRow.episode_id) == episode.id))
        if old is not None:
            s.delete(old)
            s.flush()
        s.add(episode)
        s.flush()
        s.add_all([_fresh(step) for step in rows.steps])
        if rows.verdict is not None:
            s.add(_fresh(rows.verdict))
        if rows.turns is not None:
            s.add(TurnsRow(**{**rows.turns.model_dump(), "episode_id": episode.id}))
        if rows.lineage is not None:
            s.add(LineageRow(**{**rows.lineage.model_dump(), "episode_id": episode.id}))

    def _replaceable(self, s: Session, old: EpisodeRow) -> bool:
        """Whether a stored episode gives way to a new commit of it (see `commit_episode`)."""
        if old.outcome == "infra_error":
            return True
        branch = s.get(LineageRow, old.id) if self._lineage_table() else None
        return branch is not None and s.get(EpisodeRow, branch.parent_id) is None

    def episodes(self, run_id: str) -> list[EpisodeRow]:
        """Every episode of a run, by environment, task and sample."""
        with self.session() as s:
            query = (
                select(EpisodeRow)
                .where(EpisodeRow.run_id == run_id)
                .order_by(
                    col(EpisodeRow.env_id), col(EpisodeRow.task_id), col(EpisodeRow.sample_index)
                )
            )
            return list(s.exec(query))

    def episode(self, episode_id: str, *, run_id: str | None = None) -> EpisodeRow:
        """An episode by id or unique prefix (among the episodes of ``run_id`` if given).

        Raises:
            StoreError: no episode matches, or several do.
        """
        query = select(EpisodeRow).where(col(EpisodeRow.id).startswith(episode_id))
        if run_id is not None:
            query = query.where(EpisodeRow.run_id == run_id)
        with self.session() as s:
            found = list(s.exec(query))
        if len(found) == 1:
            return found[0]
        if run_id is None:
            raise StoreError(f"{'no' if not found else len(found)} episodes match {episode_id!r}")
        if not found:
            raise StoreError(
                f"run {run_id} has no episode {episode_id!r}; `gym view {run_id} --list` lists them"
            )
        raise StoreError(
            f"{len(found)} episodes of run {run_id} match {episode_id!r}: give more of the id"
        )

    def steps(self, episode_id: str) -> list[StepRow]:
        """The steps of an episode, in order."""
        with self.session() as s:
            query = (
                select(StepRow).where(StepRow.episode_id == episode_id).order_by(col(StepRow.index))
            )
            return list(s.exec(query))

    def run_steps(self, run_id: str) -> dict[str, list[StepRow]]:
        """Episode id -> its steps in order, for every episode of a run (one query)."""
        with self.session() as s:
            query = (
                select(StepRow)
                .join(EpisodeRow, col(EpisodeRow.id) == col(StepRow.episode_id))
                .where(EpisodeRow.run_id == run_id)
                .order_by(col(StepRow.episode_id), col(StepRow.index))
            )
            out: dict[str, list[StepRow]] = {}
            for step in s.exec(query):
                out.setdefault(step.episode_id, []).append(step)
            return out

    def call_counts(self, run_id: str) -> dict[str, tuple[int, int]]:
        """Episode id -> (valid calls, steps) for every episode of a run with steps.

        A step is a valid call when it names an offered tool with arguments its schema
        accepts: the environment recorded its tool and no error.
        """
        valid = case((and_(col(StepRow.tool) != "", col(StepRow.error) == ""), 1), else_=0)
        with self.session() as s:
            query = (
                select(StepRow.episode_id, func.sum(valid), func.count())
                .join(EpisodeRow, col(EpisodeRow.id) == col(StepRow.episode_id))
                .where(EpisodeRow.run_id == run_id)
                .group_by(col(StepRow.episode_id))
            )
            return {eid: (int(ok or 0), int(n)) for eid, ok, n in s.exec(query)}

    def turns(self, episode_id: str) -> TurnsRow:
        """An episode's tools and user turns (`TurnsRow.empty` when none were stored)."""
        with self.session() as s:
            found = s.get(TurnsRow, episode_id) if self._turns_table() else None
        return found if found is not None else TurnsRow.empty(episode_id)

    def run_turns(self, run_id: str) -> dict[str, TurnsRow]:
        """Episode id -> its tools and user turns, for every episode of a run (one query).

        An episode stored without them is left out (read it as `TurnsRow.empty`).
        """
        if not self._turns_table():
            return {}
        with self.session() as s:
            query = (
                select(TurnsRow)
                .join(EpisodeRow, col(EpisodeRow.id) == col(TurnsRow.episode_id))
                .where(EpisodeRow.run_id == run_id)
            )
            return {t.episode_id: t for t in s.exec(query)}

    def _turns_table(self) -> bool:
        """Whether the store holds the turns table (a store written before it has none)."""
        if not self._has_turns:
            self._has_turns = self._has_table(TurnsRow.__tablename__)
        return self._has_turns

    def lineage(self, episode_id: str) -> LineageRow | None:
        """A forked episode's parent and fork step (None: it began at a reset)."""
        if not self._lineage_table():
            return None
        with self.session() as s:
            return s.get(LineageRow, episode_id)

    def branches(self, parent_id: str) -> list[LineageRow]:
        """The episodes forked from an episode, by fork step and branch index."""
        if not self._lineage_table():
            return []
        with self.session() as s:
            query = (
                select(LineageRow)
                .where(LineageRow.parent_id == parent_id)
                .order_by(col(LineageRow.fork_step), col(LineageRow.branch))
            )
            return list(s.exec(query))

    def _lineage_table(self) -> bool:
        """Whether the store holds the lineage table (a store written before it has none)."""
        if not self._has_lineage:
            self._has_lineage = self._has_table(LineageRow.__tablename__)
        return self._has_lineage

    def calls(self, episode_id: str) -> list[ToolCall]:
        """The tool calls of an episode, in order (steps without a call left out)."""
        return calls_of(self.steps(episode_id))

    def verdicts(self, run_id: str) -> dict[str, VerdictRow]:
        """Episode id -> current verdict, for a run."""
        with self.session() as s:
            query = (
                select(VerdictRow)
                .join(EpisodeRow, col(EpisodeRow.id) == col(VerdictRow.episode_id))
                .where(EpisodeRow.run_id == run_id, col(VerdictRow.current).is_(True))
            )
            return {v.episode_id: v for v in s.exec(query)}

    def add_verdict(
        self, verdict: VerdictRow, *, outcome: str, reward: float | None, graded: EpisodeRow
    ) -> bool:
        """Record a new current verdict for an episode (regrade), keeping the old ones.

        Under the episode's write lock (`commit_episode`'s), so regrades at once leave one
        current verdict. ``graded`` is the episode as the regrade read it: once another
        attempt replaced it (``--retry-infra``) or it was deleted, the verdict is not this
        episode's and is refused.

        A try that fails before its COMMIT in a way that may pass is tried again (see
        `commit_episode`); one that fails after it is not: it may have been recorded, and
        a second would add another verdict.

        Returns:
            Whether it was recorded (False: the episode is no longer the attempt graded).

        Raises:
            StoreUnavailable: the database could not be reached.
        """

        def record(t: _Try) -> bool:
            with self._locked(f"episode:{verdict.episode_id}") as s:
                episode = s.get(EpisodeRow, verdict.episode_id)
                if episode is None or not _same_attempt(episode, graded):
                    return False
                for old in s.exec(
                    select(VerdictRow).where(VerdictRow.episode_id == verdict.episode_id)
                ):
                    old.current = False
                    s.add(old)
                s.add(_fresh(verdict))
                episode.outcome, episode.reward = outcome, reward
                s.add(episode)
                t.committing = True
                s.commit()
                return True

        return _retried(record, recommit=False)

    # -- training --------------------------------------------------------------------

    def add_train_step(self, row: TrainStepRow) -> None:
        """Record a training step, replacing an earlier row of the same step (a resume)."""
        with self._writing() as s:
            s.exec(
                delete(TrainStepRow).where(
                    col(TrainStepRow.train_id) == row.train_id, col(TrainStepRow.step) == row.step
                )
            )
            s.add(row)
            s.commit()

    def train_steps(self, train_id: str) -> list[TrainStepRow]:
        """The recorded steps of a training run, in order."""
        with self.session() as s:
            query = (
                select(TrainStepRow)
                .where(TrainStepRow.train_id == train_id)
                .order_by(col(TrainStepRow.step))
            )
            return list(s.exec(query))

    # -- validation results -----------------------------------------------------------

    def validation(self, env_id: str, task_id: str, fingerprint: str) -> ValidationRow | None:
        """A task's kept validation result under this fingerprint, if any."""
        with self.session() as s:
            return s.get(ValidationRow, (env_id, task_id, fingerprint))

    def keep_validation(self, row: ValidationRow) -> None:
        """Keep a task's validation result (replacing one of the same fingerprint)."""
        with self._writing() as s:
            s.merge(row)
            s.commit()

    def ping(self) -> None:
        """Check that the database answers."""
        with self.session() as s:
            s.exec(text("SELECT 1"))  # type: ignore[call-overload]


@dataclass(frozen=True)
class _EpisodeRows:
    """What `Store.commit_episode` writes of one episode (copied afresh by each try)."""

    episode: EpisodeRow
    steps: Sequence[StepRow]
    verdict: VerdictRow | None
    turns: TurnsRow | None
    lineage: LineageRow | None


def _same_attempt(stored: EpisodeRow, graded: EpisodeRow) -> bool:
    """Whether a stored episode is the attempt that was graded (what grading read is alike)."""
    return (stored.started_at, stored.attempts, stored.export, stored.messages) == (
        graded.started_at,
        graded.attempts,
        graded.export,
        graded.messages,
    )


def calls_of(steps: Sequence[StepRow]) -> list[ToolCall]:
    """The tool calls among stored steps, in order."""
    return [ToolCall(name=s.tool, arguments=s.arguments) for s in steps if s.tool]
