"""A record's path field (shell ``files``, SQL ``database``) stays inside the dataset's folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gym.datasets import ShellMapping, SQLMapping, import_shell, import_sql

HERE = Path(__file__).parent
SHELL = HERE / "shell_fixture"
SQL = HERE / "sql_fixture"


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """A folder beside the dataset's (a host folder no record may name)."""
    folder = tmp_path / "host"
    folder.mkdir()
    (folder / "secret.txt").write_text("host secret\n")
    (folder / "stolen.sql").write_text((SQL / "concert_singer.sql").read_text())
    return folder


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """The dataset's folder: the fixtures' trees and dump, and a link out of it."""
    folder = tmp_path / "data"
    shutil.copytree(SHELL / "trees", folder / "trees")
    shutil.copy(SQL / "concert_singer.sql", folder)
    (folder / "out").symlink_to(tmp_path / "host")
    return folder


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("ABSOLUTE", "must be a relative path"),
        ("../host", "holds '..'"),
        ("trees/../../host", "holds '..'"),
        (".", "names the dataset's folder itself"),
        ("./", "names the dataset's folder itself"),
        ("out", "resolves (through a link) outside"),
    ],
)
def test_a_shell_record_naming_a_folder_outside_is_refused(
    tmp_path: Path, host: Path, data: Path, value: str, says: str
) -> None:
    records = [json.loads(line) for line in (SHELL / "tasks.jsonl").read_text().splitlines()]
    records[1]["tree"] = str(host) if value == "ABSOLUTE" else value
    mapping = ShellMapping.from_toml(SHELL / "mapping.toml")
    result = import_shell(records, mapping, tmp_path / "seeds", trees=data)
    (problem,) = result.problems
    assert problem.startswith("records record 2: files = ") and says in problem
    assert len(result.written) == 2
    written = "".join(p.name for p in (tmp_path / "seeds").rglob("*"))
    assert "secret.txt" not in written


def test_a_shell_record_naming_a_folder_inside_is_copied(tmp_path: Path, data: Path) -> None:
    records = [json.loads(line) for line in (SHELL / "tasks.jsonl").read_text().splitlines()]
    records[1]["tree"] = "trees/inventory"
    mapping = ShellMapping.from_toml(SHELL / "mapping.toml")
    result = import_shell(records, mapping, tmp_path / "seeds", trees=data)
    assert result.problems == [] and len(result.written) == 3


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("ABSOLUTE", "must be a relative path"),
        ("../host/stolen.sql", "holds '..'"),
        ("out/stolen.sql", "resolves (through a link) outside"),
    ],
)
def test_a_sql_record_naming_a_dump_outside_is_refused(
    tmp_path: Path, host: Path, data: Path, value: str, says: str
) -> None:
    records = [json.loads(line) for line in (SQL / "questions.jsonl").read_text().splitlines()]
    records[0]["dump"] = str(host / "stolen.sql") if value == "ABSOLUTE" else value
    mapping = SQLMapping.from_toml(SQL / "mapping.toml")
    result = import_sql(records, mapping, tmp_path / "seeds", base=data)
    (problem,) = result.problems
    assert problem.startswith("records record 1: database = ") and says in problem
    assert len(result.written) == 2
