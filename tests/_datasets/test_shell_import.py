"""The shell importer: records of a question, a gold command and a file tree -> shell tasks.

The fixture (shell_fixture/) holds three records: an output task, an output-and-files
task whose script's mode and time the record sets, and a files task whose tree is a
folder beside the dataset. The container test imports it and validates the tasks in
real containers (the oracle passes, noop and the panel fail, the perturbed oracle is
flagged).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from forget import forget
from typer.testing import CliRunner

import gym
from environments.shell import ShellEnv, ShellSpec
from gym.datasets import ShellMapping, SplitRule, import_shell

FIXTURE = Path(__file__).parent / "shell_fixture"
DATASET = FIXTURE / "tasks.jsonl"
ENV_ID = "test/ImportedShell-v0"


def mapping(**changes: object) -> ShellMapping:
    return ShellMapping.from_toml(FIXTURE / "mapping.toml").model_copy(update=changes)


def test_each_record_becomes_a_task_folder(tmp_path: Path) -> None:
    result = import_shell(DATASET, mapping(), tmp_path)
    assert result.problems == [] and result.splits == {"train": 3}
    assert result.written == [
        "shelltoy/longest-word",
        "shelltoy/out-of-stock",
        "shelltoy/run-script",
    ]
    tasks = {t.id: t for t in gym.load_tasks(tmp_path, "shelltoy")}
    run = tasks["shelltoy/run-script"]
    assert ShellSpec.of(run).compare == ("output", "files")
    assert ShellSpec.of(run).gold == "chmod 744 tools/hello.sh && sh tools/hello.sh"
    assert run.tags["difficulty"] == "easy"
    assert ShellSpec.of(tasks["shelltoy/longest-word"]).compare == ("output",)


def test_modes_times_and_folder_trees_are_kept(tmp_path: Path) -> None:
    import_shell(DATASET, mapping(), tmp_path)
    script = tmp_path / "shelltoy" / "shelltoy_run-script" / "files" / "tools" / "hello.sh"
    assert script.stat().st_mode & 0o777 == 0o644 and script.stat().st_mtime == 1_700_000_000
    stock = tmp_path / "shelltoy" / "shelltoy_out-of-stock" / "files" / "stock" / "veg.txt"
    source = FIXTURE / "trees" / "inventory" / "stock" / "veg.txt"
    assert stock.read_text() == source.read_text()
    assert stock.stat().st_mtime == source.stat().st_mtime


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tree": {"/etc/passwd": "x"}}, "relative POSIX path"),
        ({"tree": {"../up.txt": "x"}}, "'..'"),
        ({"tree": {"a": "x", "a/b": "y"}}, "is a file and a folder"),
        ({"tree": {"a": 3}}, "a text, or"),
        ({"tree": "no/such/folder"}, "no folder"),
        ({"gold": ""}, "gold"),
        ({"check": ["rows"]}, "compare"),
    ],
)
def test_a_bad_record_is_refused_by_number_and_the_others_written(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    records = [json.loads(line) for line in DATASET.read_text().splitlines()]
    records[0] |= change
    result = import_shell(records, mapping(), tmp_path, trees=FIXTURE)
    assert len(result.problems) == 1 and result.problems[0].startswith("records record 1")
    assert message in result.problems[0]
    assert len(result.written) == 2


def test_undeclared_splits_and_repeated_ids_are_refused(tmp_path: Path) -> None:
    records = [json.loads(line) for line in DATASET.read_text().splitlines()]
    records[2]["task"] = records[0]["task"]
    result = import_shell(records, mapping(split=SplitRule(value="dev")), tmp_path, trees=FIXTURE)
    assert all("split = 'dev' is not declared" in p for p in result.problems)
    result = import_shell(records, mapping(), tmp_path, trees=FIXTURE)
    assert any("already shelltoy/longest-word's" in p for p in result.problems)


def test_the_task_toml_reads_back_as_written(tmp_path: Path) -> None:
    records = [
        {"id": 'a "quoted"\nid', "question": "say 'hi'\n\\ done", "gold": "echo hi", "files": {}}
    ]
    result = import_shell(records, ShellMapping(), tmp_path)
    assert result.problems == []
    (folder,) = (tmp_path / "shell").iterdir()
    spec = tomllib.loads((folder / "task.toml").read_text())
    assert spec["id"] == 'a "quoted"\nid' and spec["prompt"] == "say 'hi'\n\\ done"


def test_gym_env_import_kind_shell_writes_the_tasks(tmp_path: Path) -> None:
    from gym._cli import app

    args = ["env", "import", str(DATASET), "--mapping", str(FIXTURE / "mapping.toml")]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "shelltoy" / "shelltoy_longest-word" / "hidden" / "gold.sh").is_file()
    plain = ["env", "import", str(DATASET), "--kind", "shell", "--family", "other"]
    result = CliRunner().invoke(app, [*plain, "--id", "x/{task}", "--out", str(tmp_path)])
    assert result.exit_code == 1  # the default tree field ("files") is absent
    assert "the record has no field 'gold'" not in result.output
    assert "no field 'files'" in " ".join(result.output.split())


# -- in real containers ----------------------------------------------------------------


class ImportedShellEnv(ShellEnv):
    """The shell family over the tasks a test imported (its seeds folder set per test)."""

    family: ClassVar[str] = "shelltoy"
    seeds: ClassVar[Path] = Path()

    @classmethod
    def seeds_dir(cls) -> Path:
        return cls.seeds


@pytest.fixture
def imported(tmp_path: Path) -> Iterator[Path]:
    result = import_shell(DATASET, mapping(), tmp_path)
    assert result.problems == []
    ImportedShellEnv.seeds = tmp_path
    gym.register(ENV_ID, f"{__name__}:ImportedShellEnv", max_steps=10, max_seconds=300)
    yield tmp_path
    forget([ENV_ID])


@pytest.mark.docker
def test_an_imported_shell_dataset_validates_in_containers(engine, imported: Path) -> None:
    from gym.runs import validate_env

    checks = validate_env(ENV_ID, repeats=1, concurrency=2)
    assert [c.task_id for c in checks] == [
        "shelltoy/longest-word",
        "shelltoy/out-of-stock",
        "shelltoy/run-script",
    ]
    for check in checks:
        assert check.ok, (check.task_id, check.problems)
        assert set(check.panel) == {"empty", "ls"} and check.perturbed == "unexpected_change"
