"""The run store when its database is out of reach: a server that never answers, a
connection dropped between and within commits, a run deleted while it is being written.

Real servers only: the session's PostgreSQL (the ``postgres_url`` fixture), SQLite files,
a local TCP port that takes connections and never answers, and `gym` as a subprocess.
"""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator

import psycopg
import pytest
from sqlalchemy import event
from sqlmodel import SQLModel
from store_rows import rows, run_row

from gym._store import Store
from gym._store._store import COMMIT_TRIES
from gym.errors import StoreError, StoreUnavailable

GYM = "import sys; from gym._cli import main; main()"  # `gym ARGS...` as a subprocess


def gym(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", GYM, *args], capture_output=True, text=True, timeout=timeout
    )


def one_line(said: str) -> str:
    """What a failed `gym` said: one line, no traceback, no SQL, no driver's words."""
    lines = said.strip().splitlines()
    assert len(lines) == 1, said
    for raw in ("Traceback", "IntegrityError", "FOREIGN KEY", "foreign key", "DELETE", "psycopg"):
        assert raw not in said, said
    return lines[0]


@pytest.fixture
def blackhole() -> Iterator[int]:
    """A local TCP port whose connections the kernel completes and nobody ever answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)  # never accepted: the handshake completes, no byte ever comes back
        yield sock.getsockname()[1]


@pytest.fixture
def pg(postgres_url: str) -> Iterator[Store]:
    store = Store(postgres_url)
    yield store
    SQLModel.metadata.drop_all(store.engine)  # one server for the session: leave it empty
    store.close()


def terminate(url: str, pid: int | None = None) -> int:
    """Terminate the database's client backends (``pid``'s only, if given) from a second
    connection, waiting until they are gone; how many were."""
    query = (
        "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        " AND backend_type = 'client backend'"
    )
    with psycopg.connect(url, autocommit=True) as admin:
        if pid is None:
            found = admin.execute(query).fetchall()
        else:
            found = admin.execute(query + " AND pid = %s", (pid,)).fetchall()
    return sum(bool(ok) for (ok,) in found)


def stored(store: Store) -> tuple[dict[str, str], dict[str, int], int]:
    """Episode outcomes, step rows per episode, verdict rows: duplicates would show."""
    steps = {eid: len(s) for eid, s in store.run_steps("run1").items()}
    return store.episode_outcomes("run1"), steps, len(store.verdicts("run1"))


# -- 1. a server that never answers --------------------------------------------------


@pytest.mark.timeout(30)
def test_a_server_that_never_answers_fails_the_open_within_the_urls_connect_timeout(blackhole):
    """The URL's connect_timeout (2 s) wins over the default (10 s); the open fails, with a
    message that says what to do, instead of hanging."""
    url = f"postgresql://nobody@127.0.0.1:{blackhole}/boxgym?connect_timeout=2"
    began = time.monotonic()
    with pytest.raises(StoreUnavailable) as info:
        Store(url)
    took = time.monotonic() - began
    assert 1.5 < took < 8, f"the open took {took:.1f} s"  # the default 10 s would not fit
    said = str(info.value)
    assert "\n" not in said and said.startswith(f"cannot open the run store at {url}: ")
    assert "check that the database server is up and that the URL names it" in said
    assert said.endswith("then run the same command again (a run resumes where it stopped)")
    assert info.value.exit_code == 1


@pytest.mark.timeout(60)
def test_gym_runs_on_a_server_that_never_answers_fails_the_work_in_one_line(blackhole):
    url = f"postgresql://nobody@127.0.0.1:{blackhole}/boxgym?connect_timeout=2"
    began = time.monotonic()
    out = gym("runs", "--db", url, timeout=30)
    assert time.monotonic() - began < 20
    assert out.returncode == 1, out.stderr  # the work failed, not the command line
    assert "run the same command again" in one_line(out.stderr)


def test_every_connection_gets_the_timeouts_and_keepalives_unless_its_url_sets_them(
    postgres_url,
):
    store = Store(postgres_url + "&keepalives_idle=99")
    reader = Store(postgres_url, read_only=True)
    try:
        for s, idle in ((store, "99"), (reader, "30")):
            with s.engine.connect() as conn:
                params = conn.connection.driver_connection.info.get_parameters()
            assert params["connect_timeout"] == "10" and params["keepalives"] == "1"
            assert params["keepalives_idle"] == idle  # the URL's value wins
            assert params["keepalives_interval"] == "10" and params["keepalives_count"] == "3"
            assert params["tcp_user_timeout"] == "60000"
    finally:
        SQLModel.metadata.drop_all(store.engine)
        store.close()
        reader.close()


# -- 2. unreachable: exit 1; names nothing: exit 2 ---------------------------------------


def test_a_store_that_names_nothing_stays_a_usage_error(pg, postgres_url):
    with pytest.raises(StoreError) as unknown:
        pg.run("no-such-run")
    assert type(unknown.value) is StoreError and unknown.value.exit_code == 2
    with pytest.raises(StoreError) as nodb:
        Store(postgres_url.replace("/boxgym?", "/no_such_db?"))
    assert type(nodb.value) is StoreError and nodb.value.exit_code == 2
    assert 'database "no_such_db" does not exist' in str(nodb.value)


# -- 3. commits tried again -------------------------------------------------------------


def drop_within_commits(store: Store, url: str, times: int) -> list[str]:
    """Terminate the store's backend as a commit writes its steps, the first ``times``
    times: the transaction is cut after its episode row was written. The statements seen."""
    seen: list[str] = []

    def cut(conn, _cursor, statement, _params, _context, _many) -> None:
        if statement.startswith("INSERT INTO steps"):
            seen.append(statement)
            if len(seen) <= times:
                assert terminate(url, conn.connection.driver_connection.info.backend_pid) == 1

    event.listen(store.engine, "before_cursor_execute", cut)
    return seen


def test_a_connection_terminated_between_two_commits_costs_nothing(pg, postgres_url):
    pg.ensure_run(run_row(config={}))
    assert pg.commit_episode(*rows("e1", started_at=time.time(), verdict_reward=1.0))
    assert terminate(postgres_url) == 1  # the store's pooled connection
    assert pg.commit_episode(*rows("e2", started_at=time.time(), verdict_reward=1.0))
    assert stored(pg) == ({"e1": "pass", "e2": "pass"}, {"e1": 3, "e2": 3}, 2)


def test_a_connection_terminated_within_a_commit_is_tried_again_once_without_duplicates(
    pg, postgres_url
):
    pg.ensure_run(run_row(config={}))
    assert pg.commit_episode(*rows("e1", started_at=time.time(), verdict_reward=1.0))
    seen = drop_within_commits(pg, postgres_url, times=1)
    began = time.monotonic()
    assert pg.commit_episode(*rows("e2", started_at=time.time(), verdict_reward=1.0))
    took = time.monotonic() - began
    assert len(seen) == 2  # the cut try, then the one that committed
    assert stored(pg) == ({"e1": "pass", "e2": "pass"}, {"e1": 3, "e2": 3}, 2)
    assert took < 5, f"the commit took {took:.1f} s"


@pytest.mark.timeout(60)
def test_a_connection_that_drops_on_every_try_is_unavailable_and_leaves_nothing(pg, postgres_url):
    pg.ensure_run(run_row(config={}))
    seen = drop_within_commits(pg, postgres_url, times=99)
    with pytest.raises(StoreUnavailable) as info:
        pg.commit_episode(*rows("e1", started_at=time.time(), verdict_reward=1.0))
    assert len(seen) == COMMIT_TRIES
    said = str(info.value)
    assert "\n" not in said and f"({COMMIT_TRIES} tries)" in said
    assert "run the same command again (a run resumes where it stopped)" in said
    assert info.value.exit_code == 1 and info.value.__cause__ is not None
    assert stored(pg) == ({}, {}, 0)  # no half-written episode


# -- 4. gym runs rm --force ---------------------------------------------------------------

WRITER = """
import sys, time
from gym._store import EpisodeRow, LeaseLost, RunRow, StepRow, Store
store, now, me = Store(sys.argv[1]), time.time(), "writer:1:1"
run = RunRow(id="live", created_at=now, updated_at=now, config={}, policy="o", boxgym_version="0")
store.start_run(run, planned=10**6, owner=me)
for i in range(10**6):
    episode = EpisodeRow(id=f"live-e{i}", run_id="live", env_id="e", env_version=0, task_id="t",
                         split="train", sample_index=i, seed=0, policy="o", outcome="pass")
    steps = [StepRow(episode_id=episode.id, index=k, tool="bash") for k in range(3)]
    try:
        store.commit_episode(episode, steps, None, owner=me)
    except LeaseLost as exc:
        print("LOST", exc, flush=True)
        sys.exit(3)
    if i == 0:
        print("WRITING", flush=True)
    time.sleep(0.02)
"""


@pytest.mark.timeout(120)
def test_rm_force_of_a_run_being_written_deletes_it_whole_and_stops_its_writer(tmp_path):
    path = tmp_path / "runs.db"
    url = f"sqlite:///{path}"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "WRITING"
        refused = gym("runs", "rm", "--yes", "live", "--db", url)
        assert refused.returncode == 2 and "stop it first" in one_line(refused.stderr)
        out = gym("runs", "rm", "--force", "--yes", "live", "--db", url)
        assert out.returncode == 0, out.stderr
        assert one_line(out.stderr).startswith("deleted 1 run (")
        said, errs = writer.communicate(timeout=60)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.communicate()
    assert writer.returncode == 3, errs
    assert "LOST run live was deleted (`gym runs rm --force`)" in said
    with sqlite3.connect(path) as db:
        for table in ("runs", "run_status", "run_owner", "episodes", "steps"):
            assert db.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,), table
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []  # no orphan
    db.close()


def test_rm_of_a_run_another_table_refers_to_says_so_in_one_line_and_deletes_nothing(tmp_path):
    path = tmp_path / "runs.db"
    url = f"sqlite:///{path}"
    store = Store(url)
    store.ensure_run(run_row(config={}))
    store.commit_episode(*rows("e1", started_at=time.time(), verdict_reward=1.0))
    store.close()
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE notes (run_id TEXT REFERENCES runs(id), body TEXT)")
        db.execute("INSERT INTO notes VALUES ('run1', 'a note of mine')")
    db.close()
    out = gym("runs", "rm", "--force", "--yes", "run1", "--db", url)
    assert out.returncode == 2, out.stderr
    said = one_line(out.stderr)
    assert "run run1 is referred to by table notes, which is not boxgym's" in said
    assert said.endswith("nothing was deleted")
    kept = Store(url, read_only=True)
    assert stored(kept) == ({"e1": "pass"}, {"e1": 3}, 1)
    kept.close()
