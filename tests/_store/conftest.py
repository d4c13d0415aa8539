"""The run store each test of tests/_store is given: on SQLite and on a real PostgreSQL.

Fixtures only; the rows the tests store are built by tests/store_rows.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import SQLModel, create_engine

from gym._store import Store


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A new store's URL: a SQLite file, or the session's PostgreSQL server (its tables
    dropped after the test: one server for the session, left empty)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'runs.db'}"
        return
    url = request.getfixturevalue("postgres_url")
    yield url
    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    SQLModel.metadata.drop_all(engine)
    engine.dispose()


@pytest.fixture
def store(url: str) -> Iterator[Store]:
    """A read-write `Store` on ``url``, closed after the test."""
    s = Store(url)
    yield s
    s.close()
