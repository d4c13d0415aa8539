"""The tool-API importer: records with tools, user turns, gold calls, initial state -> tasks.

The dataset (tests/environments/toolapi/notebook.jsonl, mapping notebook.toml) is the
toolapi family's example: three tasks over a toy backend class (seeds/toolapi/notebook.py).
The container test imports it and validates the tasks in real containers (the oracle
passes, noop and the panel fail).
"""

from __future__ import annotations

import json
import shutil
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from forget import forget
from typer.testing import CliRunner

import gym
from environments.toolapi import ToolAPIEnv
from gym._core._models import load_tasks
from gym.datasets import ToolAPIMapping, import_toolapi

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "environments" / "toolapi"
DATASET = DATA / "notebook.jsonl"
BACKEND = ROOT / "seeds" / "toolapi" / "notebook.py"
ENV_ID = "test/ImportedToolAPI-v0"


def mapping(**changes: object) -> ToolAPIMapping:
    return ToolAPIMapping.from_toml(DATA / "notebook.toml").model_copy(update=changes)


def records() -> list[dict[str, object]]:
    return [json.loads(line) for line in DATASET.read_text().splitlines()]


def test_records_become_task_folders_with_turns_tools_state_and_gold(tmp_path: Path) -> None:
    result = import_toolapi(DATASET, mapping(), tmp_path)
    assert result.problems == []
    assert result.written == [
        "notebook/add-then-list",
        "notebook/append-and-read",
        "notebook/read-only",
    ]
    assert result.splits == {"train": 2, "eval": 1}
    folder = tmp_path / "toolapi" / "notebook_append-and-read"
    spec = tomllib.loads((folder / "task.toml").read_text())
    assert spec["prompt"] == "Add 'paint the fence' to my 'todo' note."
    assert spec["turns"] == [
        "Read the whole todo note back to me.",
        "Then delete the 'ideas' note.",
    ]
    assert spec["backend"]["classes"] == ["notebook:NoteBook"]
    assert json.loads((folder / "state.json").read_text())["NoteBook"]["edits"] == 4
    gold = json.loads((folder / "hidden" / "gold.json").read_text())
    assert [[c["name"] for c in turn] for turn in gold["turns"]] == [
        ["append_to_note"],
        ["read_note"],
        ["delete_note"],
    ]
    task = {t.id: t for t in load_tasks(tmp_path, "toolapi")}["notebook/append-and-read"]
    assert task.turns == ("Read the whole todo note back to me.", "Then delete the 'ideas' note.")
    assert [t["function"]["name"] for t in task.tools][:2] == ["list_notes", "read_note"]
    assert task.split == "eval" and task.tags["difficulty"] == "medium"


def test_a_bad_record_is_named_and_left_out_the_others_written(tmp_path: Path) -> None:
    bad = records()
    bad[0]["gold"] = [[{"name": "rename_note", "arguments": {}}], []]  # no such tool
    bad[1]["gold"] = [[]]  # one list for three turns
    bad[2]["gold"] = [[{"name": "read_note", "arguments": {"title": 7}}]]  # wrong type
    fine = {**records()[2], "id": "fine"}
    result = import_toolapi([*bad, fine], mapping(), tmp_path)
    assert result.written == ["notebook/fine"]
    assert "record 1: gold turn 1: 'rename_note' is not one of the tools" in result.problems[0]
    assert "record 2: gold: 1 lists of calls for 3 user turns" in result.problems[1]
    assert "record 3: gold turn 1: read_note" in result.problems[2]
    assert "7 is not of type 'string'" in result.problems[2]
    assert not (tmp_path / "toolapi" / "notebook_read-only").exists()


def test_a_class_that_is_not_module_colon_class_and_a_bad_schema_are_refused(
    tmp_path: Path,
) -> None:
    result = import_toolapi(records()[:1], mapping(classes=["NoteBook"]), tmp_path)
    assert "classes: 'NoteBook' is not 'module:Class'" in result.problems[0]
    tools = [{"name": "list_notes", "parameters": {"type": "array"}}]
    result = import_toolapi(records()[:1], mapping(tools=tools), tmp_path)
    assert "tools[0]" in result.problems[0] and "JSON schema of an object" in result.problems[0]


def test_a_mapping_of_another_kind_is_refused() -> None:
    with pytest.raises(gym.ConfigError, match="kind = 'sql'"):
        ToolAPIMapping.from_dict({"kind": "sql", "family": "x"})
    with pytest.raises(gym.ConfigError, match="solution"):
        ToolAPIMapping.from_dict({"family": "x", "solution": "code"})


def test_gym_env_import_with_a_toolapi_mapping_writes_the_tasks(tmp_path: Path) -> None:
    from gym._cli import app

    args = ["env", "import", str(DATASET), "--mapping", str(DATA / "notebook.toml")]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "toolapi" / "notebook_read-only" / "hidden" / "gold.json").is_file()


def test_the_shipped_example_tasks_are_what_the_importer_writes(tmp_path: Path) -> None:
    import_toolapi(DATASET, mapping(), tmp_path)
    for folder in sorted((tmp_path / "toolapi").iterdir()):
        shipped = ROOT / "seeds" / "toolapi" / folder.name
        for file in sorted(p for p in folder.rglob("*") if p.is_file()):
            assert (shipped / file.relative_to(folder)).read_bytes() == file.read_bytes(), file


# -- in real containers ----------------------------------------------------------------


class ImportedToolAPIEnv(ToolAPIEnv):
    """The tool-API family over the tasks a test imported (its seeds folder set per test)."""

    family: ClassVar[str] = "notes"
    seeds: ClassVar[Path] = Path()

    @classmethod
    def seeds_dir(cls) -> Path:
        return cls.seeds


@pytest.fixture
def imported(tmp_path: Path) -> Iterator[Path]:
    result = import_toolapi(DATASET, mapping(family="notes"), tmp_path)
    assert result.problems == []
    shutil.copy(BACKEND, tmp_path / "notes" / "notebook.py")
    ImportedToolAPIEnv.seeds = tmp_path
    gym.register(ENV_ID, f"{__name__}:ImportedToolAPIEnv", max_steps=20, max_seconds=300)
    yield tmp_path
    forget([ENV_ID])


@pytest.mark.docker
def test_an_imported_tool_api_dataset_validates_in_real_containers(
    engine: None, imported: Path
) -> None:
    from gym._run._validate import validate_env
    from gym._store import Store

    store = Store(f"sqlite:///{imported}/validation.db")
    checks = validate_env(ENV_ID, repeats=1, concurrency=3, store=store)
    assert [c.task_id for c in checks] == [
        "notebook/add-then-list",
        "notebook/append-and-read",
        "notebook/read-only",
    ]
    for check in checks:
        assert check.ok, (check.task_id, check.problems)
        assert check.oracle == ["pass"] and check.noop == "fail"
        assert check.panel == {"late": "fail", "probe": "fail"}
