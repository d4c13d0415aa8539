"""Fixtures of the viewer tests: a store holding two runs (see viewdata.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import viewdata

from gym._store import Store


@pytest.fixture(scope="session")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A SQLite store holding the two runs; yields its URL."""
    path: Path = tmp_path_factory.mktemp("view") / "runs.db"
    url = f"sqlite:///{path}"
    store = Store(url)
    viewdata.fill(store)
    store.close()
    yield url
