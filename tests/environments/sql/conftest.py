"""Fixtures of the SQL family's tests on tasks with a database of their own."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from environments.sql import SQLEnv
from gym._core._models import load_tasks

SEEDS = Path(__file__).parent / "seeds"
"""Tasks with their own database (own-read, own-write): a copy is what the tests load."""


@pytest.fixture(scope="module")
def env(engine: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SQLEnv]:
    """An SQL environment over a copy of this folder's seeds (5 s statement timeout)."""
    seeds = tmp_path_factory.mktemp("own") / "seeds"
    shutil.copytree(SEEDS, seeds)
    made = SQLEnv(tasks=list(load_tasks(seeds, "sql")), statement_timeout=5.0)
    yield made
    made.close()
