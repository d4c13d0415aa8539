"""Opening a run store at a path that holds something else, nothing, or no folder yet:
one line that names the store and what to do, never the SQL or a library's link."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from store_rows import episode, run_row

from gym._store import Store
from gym.errors import StoreError

NOT_A_STORE = "is not a boxgym run store"


def one_line(info: pytest.ExceptionInfo[StoreError]) -> str:
    """The error's message, checked to be one line with no SQL and no link."""
    message = str(info.value)
    assert "\n" not in message and "SELECT" not in message and "http" not in message, message
    return message


@pytest.mark.parametrize("read_only", [True, False])
def test_a_file_that_is_no_database_is_named_in_one_line(tmp_path, read_only):
    path = tmp_path / "notdb.db"
    path.write_text("these are my notes, not a database\n" * 200)
    url = f"sqlite:///{path}"
    with pytest.raises(StoreError) as info:
        Store(url, read_only=read_only).runs()
    assert one_line(info) == (
        f"{url} is not a boxgym run store (file is not a database); "
        "pass --db a store made by gym run, or a new path"
    )


def test_a_database_of_something_else_is_not_a_run_store(tmp_path):
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE notes (body TEXT)")
    with pytest.raises(StoreError) as info:
        Store(f"sqlite:///{path}", read_only=True).runs()
    assert one_line(info).startswith(f"sqlite:///{path} {NOT_A_STORE} (no such table: runs)")


def test_an_empty_file_reads_as_no_store_and_a_run_makes_it_one(tmp_path):
    """An empty file is no store to read (as a missing one); a run fills it."""
    path = tmp_path / "empty.db"
    path.touch()
    url = f"sqlite:///{path}"
    with pytest.raises(StoreError) as info:
        Store(url, read_only=True)
    assert one_line(info) == f"no run store at {str(path)!r}: `gym run` creates one"
    Store(url).ensure_run(run_row("r1", config={}, policy="noop"))
    assert [r.id for r in Store(url, read_only=True).runs()] == ["r1"]


def test_a_store_in_a_missing_folder_is_made_with_its_folder(tmp_path):
    """As every ``--out`` does: the folder of a new store is made, not refused."""
    path = tmp_path / "no" / "such" / "runs.db"
    store = Store(f"sqlite:///{path}")
    store.ensure_run(run_row("r1", config={}, policy="noop"))
    row = episode("e1", "fail", "r1", env_id="e", seed=0, policy="noop", messages=[])
    store.commit_episode(row, [], None)
    assert path.is_file() and store.run("r1").id == "r1"


def test_a_folder_given_as_the_store_is_named_in_one_line(tmp_path):
    folder = tmp_path / "adir.db"
    folder.mkdir()
    with pytest.raises(StoreError) as info:
        Store(f"sqlite:///{folder}")
    assert one_line(info) == f"{folder} is a folder, not a file; pass --db a file path"


@pytest.mark.parametrize(
    "url",
    [
        "sqlite://",
        "sqlite:///",
        "sqlite:///:memory:",
        "sqlite+pysqlite:///:memory:",
        "sqlite:///file::memory:?uri=true",  # helper I: as a URI, after the first three
        "sqlite:///file:mem1?mode=memory&cache=shared&uri=true",
    ],
)
def test_a_store_in_memory_is_refused(url):
    """A run into ``sqlite://`` said finished, then no command could read it (helper H)."""
    with pytest.raises(StoreError, match="in memory: every episode would be lost"):
        Store(url)


@pytest.mark.parametrize("value", ["abc", "0", "-5", "nan"])
def test_a_stale_time_that_is_no_positive_number_is_refused(tmp_path, monkeypatch, value):
    """``GYM_RUN_STALE_S=abc`` was an internal error (helper H)."""
    from gym.errors import ConfigError

    monkeypatch.setenv("GYM_RUN_STALE_S", value)
    with pytest.raises(ConfigError, match="GYM_RUN_STALE_S"):
        Store(f"sqlite:///{tmp_path / 'runs.db'}")


def test_a_sqlite_uri_naming_a_file_is_a_store(tmp_path):
    store = Store(f"sqlite:///file:{tmp_path / 'runs.db'}?uri=true")
    store.close()
    assert (tmp_path / "runs.db").stat().st_size > 0


def _unwritable(folder: Path) -> Iterator[None]:
    """The folder made unwritable for this process (root: the immutable attribute)."""
    folder.chmod(0o555)
    root = os.geteuid() == 0
    if root and subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode:
        pytest.skip("root here, and the folder's file system takes no immutable attribute")
    try:
        yield
    finally:
        if root:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        folder.chmod(0o755)


def test_a_store_in_a_folder_nobody_may_write_is_read_without_a_file_beside_it(tmp_path):
    """On read-only media a reader could not make the WAL's shared-memory file, so the
    viewer could not even list the runs: there it reads the file as immutable."""
    folder = tmp_path / "media"
    folder.mkdir()
    url = f"sqlite:///{folder / 'runs.db'}"
    writer = Store(url)
    writer.ensure_run(run_row("r1", config={}, policy="noop"))
    writer.commit_episode(episode("e1", run_id="r1"), [], None)
    writer.close()
    assert sorted(p.name for p in folder.iterdir()) == ["runs.db"]
    with contextlib.contextmanager(_unwritable)(folder):
        assert not os.access(folder, os.W_OK)
        reader = Store(url, read_only=True)
        assert [r.id for r in reader.runs()] == ["r1"]
        assert [e.id for e in reader.episodes("r1")] == ["e1"]
        reader.close()
