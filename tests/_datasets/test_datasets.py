"""The importer: a dataset, through a field mapping, becomes seed tasks checked as written."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import tomllib
import types
from pathlib import Path
from typing import Any

import pytest

import gym
from gym import ConfigError
from gym.datasets import (
    DatasetMapping,
    ImportedTask,
    TaskFormat,
    import_dataset,
    load_indexed_tasks,
    read_records,
)

RECORDS = [
    {
        "n": 2,
        "q": "Add two numbers.",
        "code": "def add(a, b):\n    return a + b\n",
        "tests": ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"],
        "level": "easy",
    },
    {
        "n": 10,
        "q": "Reverse a string.",
        "code": "def helper(s):\n    return s[::-1]\n\ndef rev(s):\n    return helper(s)\n",
        "tests": ["assert rev('ab') == 'ba'"],
        "level": "easy",
    },
    {
        "n": 3,
        "q": "Count the nodes of a list built in setup.",
        "code": "def size(xs):\n    return len(xs)\n",
        "tests": ["assert size(data) == 3"],
        "setup": "data = [1, 2, 3]",
        "level": "medium",
    },
]
MAPPING = {
    "family": "toy",
    "id": "Toy/{n}",
    "prompt": "{q}\nYour code should pass this test:\n{tests[0]}\n",
    "solution": "code",
    "checks": "tests",
    "setup": "setup",
    "split": {"field": "n", "ranges": {"train": "1-5", "eval": "6-20"}},
    "tags": {"level": "{level}"},
}


def mapping(**changes: Any) -> DatasetMapping:
    return DatasetMapping.from_dict(MAPPING | changes)


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_a_record_becomes_a_task_through_templates_and_fields() -> None:
    task = mapping(setup="")(RECORDS[0])
    assert task.id == "Toy/2" and task.split == "train"
    assert (
        task.prompt == "Add two numbers.\nYour code should pass this test:\nassert add(1, 2) == 3\n"
    )
    assert task.checks == RECORDS[0]["tests"] and task.tags == {"level": "easy"}
    assert mapping(setup="")(RECORDS[1]).split == "eval"


def test_a_missing_field_names_the_mapping_key_and_the_records_fields() -> None:
    with pytest.raises(ConfigError, match=r"checks = 'nope'.*fields: code, level, n, q, tests"):
        mapping(checks="nope", setup="")(RECORDS[0])
    with pytest.raises(ConfigError, match=r"prompt: template .* cannot be filled"):
        mapping(prompt="{missing}", setup="")(RECORDS[0])


def test_a_mapping_file_with_an_unknown_key_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "m.toml"
    file.write_text('family = "toy"\nid = "{n}"\nprompt = "{q}"\nsolution = "code"\n'
                    'checks = "tests"\nprompt_template = "x"\n')  # fmt: skip
    with pytest.raises(ConfigError, match=rf"{file}: prompt_template = 'x'"):
        DatasetMapping.from_toml(file)


def test_folders_layout_writes_loadable_tasks_in_natural_order(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "toy.jsonl", RECORDS)
    result = import_dataset(source, mapping(), tmp_path / "seeds")
    assert result.problems == [] and result.written == ["Toy/2", "Toy/3", "Toy/10"]
    assert result.splits == {"train": 2, "eval": 1}
    tasks = gym.load_tasks(tmp_path / "seeds", "toy")
    assert [t.id for t in tasks] == ["Toy/2", "Toy/3", "Toy/10"]
    folder = tmp_path / "seeds" / "toy" / "Toy_10"
    spec = tomllib.loads((folder / "task.toml").read_text())
    assert spec["grading"] == {
        "kind": "calls", "timeout": 120.0, "module": "solution.py", "entry": "rev",
        "tests": ["check_1"], "call_timeout": 10.0,
    }  # fmt: skip
    assert (folder / "repo/solution.py").read_text() == (
        "def rev(s):\n    raise NotImplementedError\n"
    )
    assert (folder / "oracle/solution.py").read_text() == RECORDS[1]["code"]


def _run_checks(folder: Path, which: str) -> bool:
    """The generated calls checks, run in-process against the oracle or the stub."""
    spec = tomllib.loads((folder / "task.toml").read_text())["grading"]
    solution: dict[str, Any] = {}
    exec((folder / which / "solution.py").read_text(), solution)
    checks: dict[str, Any] = {"math": math}
    exec((folder / "hidden/checks.py").read_text(), checks)
    try:
        for name in spec["tests"]:
            checks[name](solution[spec["entry"]])
    except (AssertionError, NotImplementedError):
        return False
    return True


def test_a_slow_task_gets_its_own_call_timeout(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "toy.jsonl", RECORDS)
    import_dataset(source, mapping(call_timeouts={"Toy/10": 99.0}), tmp_path / "seeds")
    spec = {t.id: t.data["grading"] for t in gym.load_tasks(tmp_path / "seeds", "toy")}
    assert spec["Toy/10"]["call_timeout"] == 99.0 and spec["Toy/2"]["call_timeout"] == 10.0


def test_generated_checks_pass_on_the_oracle_and_fail_on_the_stub(tmp_path: Path) -> None:
    import_dataset(write_jsonl(tmp_path / "toy.jsonl", RECORDS), mapping(), tmp_path / "seeds")
    for name in ("Toy_2", "Toy_3", "Toy_10"):
        folder = tmp_path / "seeds" / "toy" / name
        assert _run_checks(folder, "oracle"), name
        assert not _run_checks(folder, "repo"), name
    checks = (tmp_path / "seeds/toy/Toy_3/hidden/checks.py").read_text()
    assert "def _setup():\n    global data\n    data = [1, 2, 3]\n" in checks


def test_a_bad_record_is_reported_and_left_out_the_others_written(tmp_path: Path) -> None:
    bad = [
        RECORDS[0] | {"n": 99},  # in no split range
        RECORDS[0] | {"n": 4, "code": "def add(a, b) return"},  # not Python
        RECORDS[0] | {"n": 5, "tests": ["assert nothing_defined(1)"]},  # no entry to find
        RECORDS[0],  # a repeated id
    ]
    source = write_jsonl(tmp_path / "toy.jsonl", [*RECORDS, *bad])
    result = import_dataset(source, mapping(), tmp_path / "seeds")
    assert result.written == ["Toy/2", "Toy/3", "Toy/10"]
    text = "\n".join(result.problems)
    assert len(result.problems) == 4, text
    assert "record 4: split: n = 99 falls in no range" in text
    assert "record 5 (Toy/4): solution: not valid Python" in text
    assert "record 6 (Toy/5): entry = '': no function of the solution" in text
    assert "record 7 (Toy/2): id = 'Toy/2': its folder Toy_2 is already Toy/2's" in text


def test_a_split_the_family_does_not_declare_is_refused(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "toy.jsonl", RECORDS)
    result = import_dataset(source, mapping(splits={"train": "training"}), tmp_path / "seeds")
    assert result.written == ["Toy/2", "Toy/3"]
    assert result.problems == [
        "toy.jsonl record 2 (Toy/10): split = 'eval': not a declared split; allowed: train"
    ]


def test_a_callable_maps_records_and_may_skip_them(tmp_path: Path) -> None:
    def to_task(record: Any) -> ImportedTask | None:
        if record["level"] == "medium":
            return None
        return ImportedTask(
            id=f"C-{record['n']}", prompt=record["q"], solution=record["code"],
            checks=record["tests"],
        )  # fmt: skip

    result = import_dataset(
        RECORDS, to_task, tmp_path / "seeds", task_format=TaskFormat(family="callable")
    )
    assert result.written == ["C-2", "C-10"] and result.skipped == 1
    with pytest.raises(ConfigError, match="task_format"):
        import_dataset(RECORDS, to_task, tmp_path / "seeds")


def test_json_and_csv_datasets_read_the_same_records(tmp_path: Path) -> None:
    (tmp_path / "d.json").write_text(json.dumps(RECORDS))
    (tmp_path / "w.json").write_text(json.dumps({"data": RECORDS}))
    assert read_records(tmp_path / "d.json") == RECORDS == read_records(tmp_path / "w.json")
    import csv

    with (tmp_path / "d.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["n", "q", "code", "tests", "level"])
        writer.writeheader()
        for r in RECORDS[:2]:
            writer.writerow({**r, "tests": json.dumps(r["tests"])})
    rows = read_records(tmp_path / "d.csv")
    task = mapping(setup="", json_fields=["tests"])(rows[1])
    assert task.id == "Toy/10" and task.checks == ["assert rev('ab') == 'ba'"]


def test_a_malformed_jsonl_line_is_named(tmp_path: Path) -> None:
    (tmp_path / "x.jsonl").write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(ConfigError, match=r"x.jsonl line 2: not valid JSON"):
        read_records(tmp_path / "x.jsonl")


@pytest.mark.skipif(
    importlib.util.find_spec("datasets") is None, reason="the `datasets` package is not installed"
)
def test_a_local_hugging_face_dataset_is_read(tmp_path: Path) -> None:
    import datasets  # type: ignore[import-not-found, unused-ignore]

    datasets.Dataset.from_list(RECORDS[:2]).save_to_disk(str(tmp_path / "hf"))
    rows = read_records(tmp_path / "hf")
    assert [r["n"] for r in rows] == [2, 10]


def test_index_layout_pins_the_data_and_rebuilds_tasks_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GYM_DATA", str(tmp_path / "data"))
    source = write_jsonl(tmp_path / "toy.jsonl", RECORDS)
    result = import_dataset(source, mapping(), tmp_path / "seeds", layout="index")
    folder = tmp_path / "seeds" / "toy"
    assert sorted(p.name for p in folder.iterdir()) == ["index.json", "toy.jsonl"]
    assert (folder / "toy.jsonl").read_bytes() == source.read_bytes()
    tasks = load_indexed_tasks(folder)
    assert [t.id for t in tasks] == result.written == ["Toy/2", "Toy/3", "Toy/10"]
    assert tasks[0].folder().is_relative_to(tmp_path / "data")
    assert (
        tasks[0].hidden_hash == gym.load_tasks(tasks[0].folder().parents[1], "toy")[0].hidden_hash
    )


def test_an_index_refuses_changed_data_and_tasks_whose_files_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GYM_DATA", str(tmp_path / "data"))
    source = write_jsonl(tmp_path / "toy.jsonl", RECORDS)
    import_dataset(source, mapping(), tmp_path / "seeds", layout="index")
    folder = tmp_path / "seeds" / "toy"
    index = folder / "index.json"
    text = index.read_text()
    entry = json.loads(text.splitlines()[-3])  # Toy/10's line, the last task
    index.write_text(text.replace(entry["sha256"], "0" * 64))
    tasks = load_indexed_tasks(folder)
    assert [t.id for t in tasks] == ["Toy/2", "Toy/3"]
    assert "task 'Toy/10': its files differ from the ones imported" in tasks.problems[0]
    (folder / "toy.jsonl").write_text(source.read_text().replace("Add", "Sum"))
    with pytest.raises(ConfigError, match="the data changed since it was imported"):
        load_indexed_tasks(folder)


def test_a_check_that_cannot_fail_is_refused(tmp_path: Path) -> None:
    """A CSV cell of JSON text read as one check would be a list literal: always true."""
    record = RECORDS[0] | {"tests": '["assert add(1, 2) == 3"]'}
    result = import_dataset([record], mapping(setup=""), tmp_path / "seeds")
    assert result.written == []
    assert "no assert, call or raise, so it cannot fail" in result.problems[0]


def test_a_correction_replaces_fields_of_one_record_only(tmp_path: Path) -> None:
    fixed = ["assert add(1, 2) == 3", "assert add(-1, 2) == 1"]
    corrected = mapping(
        setup="", corrections={"Toy/2": {"why": "erratum", "fields": {"tests": fixed}}}
    )
    assert corrected(RECORDS[0]).checks == fixed
    assert corrected(RECORDS[0]).prompt.endswith("assert add(1, 2) == 3\n")
    assert corrected(RECORDS[1]).checks == RECORDS[1]["tests"]
    typo = mapping(setup="", corrections={"Toy/2": {"why": "x", "fields": {"test": fixed}}})
    with pytest.raises(ConfigError, match=r"corrections.'Toy/2': the record has no field 'test'"):
        typo(RECORDS[0])
    with pytest.raises(ConfigError, match=r"corrections.Toy/2.why"):
        mapping(corrections={"Toy/2": {"why": "", "fields": {"tests": fixed}}})


def test_classes_of_the_solution_that_the_checks_build_are_imported_and_stubbed(
    tmp_path: Path,
) -> None:
    record = {
        "n": 4,
        "q": "Sum a pair.",
        "code": "class Pair:\n    def __init__(self, a, b):\n        self.a, self.b = a, b\n\n"
        "def total(p):\n    return p.a + p.b\n",
        "tests": ["assert total(Pair(1, 2)) == 3"],
        "level": "easy",
    }
    import_dataset([record], mapping(setup=""), tmp_path / "seeds")
    folder = tmp_path / "seeds" / "toy" / "Toy_4"
    checks = (folder / "hidden/checks.py").read_text()
    assert (
        "    global total, Pair\n    total = candidate\n    from solution import Pair\n" in checks
    )
    stub = (folder / "repo/solution.py").read_text()
    assert stub.startswith("class Pair:") and stub.endswith(
        "def total(p):\n    raise NotImplementedError\n"
    )
    solution = types.ModuleType("solution")
    for which, passes in (("oracle", True), ("repo", False)):
        exec((folder / which / "solution.py").read_text(), solution.__dict__)
        with pytest.MonkeyPatch.context() as patch:
            patch.setitem(sys.modules, "solution", solution)
            assert _run_checks(folder, which) is passes


def test_a_missing_key_is_named_with_its_option_never_the_whole_mapping():
    """`gym env import data.jsonl --family toy`: say what is missing, not the dict."""
    with pytest.raises(ConfigError) as exc:
        DatasetMapping.from_dict({"family": "toy", "split": {"value": "train"}}, source="cli")
    said = str(exc.value)
    assert said.startswith("cli: missing id, prompt, solution, checks: set them in the mapping")
    assert "(on the command line: --id, --prompt, --solution, --checks)" in said
    assert "{'family'" not in said and "Field required" not in said


def test_import_of_a_file_that_does_not_exist_names_it_first(tmp_path, capsys):
    from gym._cli._app import run_cli

    missing = tmp_path / "nothere.jsonl"
    assert run_cli(["env", "import", str(missing), "--family", "toy"]) == 2
    assert (
        capsys.readouterr().err
        == f"error: {missing}: no such file or folder: name the dataset to import\n"
    )
