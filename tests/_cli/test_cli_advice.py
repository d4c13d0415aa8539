"""Rough edges a demanding new user met (issue cli58): each command says what it did, what
it picked and how to go on, and writes nothing halfway."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

GYM = os.path.join(os.path.dirname(sys.executable), "gym")


def gym_cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The real `gym` in a child process (help texts are made as it starts)."""
    return subprocess.run(
        [GYM, *args], capture_output=True, text=True, env={**os.environ, **env}, timeout=120
    )


def test_db_help_names_the_store_used_without_it_here(tmp_path: Path):
    environ = {k: v for k, v in os.environ.items() if k != "GYM_DB_URL"}
    shown = subprocess.run(
        [GYM, "report", "--help"],
        capture_output=True,
        text=True,
        env={**environ, "GYM_DATA": str(tmp_path), "COLUMNS": "400"},
        timeout=120,
    )
    assert f"(default: sqlite:///{tmp_path}/runs.db)" in shown.stdout, shown.stdout
    told = gym_cli("report", "--help", GYM_DB_URL="sqlite:///x.db", COLUMNS="400")
    assert "(default: the GYM_DB_URL set here)" in told.stdout, told.stdout
