"""boxgym/BFCL-MultiTurn-v0: the shipped tasks, the import script's parsing, 3 tasks validated."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import environments.toolapi as toolapi
import gym
from environments.bfcl import BFCLEnv
from environments.toolapi._grading import load_gold

ROOT = Path(__file__).resolve().parents[3]
ENV_ID = "boxgym/BFCL-MultiTurn-v0"


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "import_bfcl", ROOT / "scripts" / "import_bfcl.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_200_tasks_ship_with_a_fixed_held_out_split() -> None:
    tasks = BFCLEnv.load_tasks()
    assert len(tasks) == 200 and not tasks.problems  # type: ignore[attr-defined]
    held_out = [t.id for t in tasks if t.split == "test"]
    assert len(held_out) == 49  # every 4th but 43, which opens as 40 does
    assert all(int(t.rsplit("_", 1)[1]) % 4 == 3 for t in held_out)
    assert BFCLEnv.splits == {"train": "training", "test": "held-out"}


def test_no_held_out_task_opens_with_a_training_task_s_first_turn() -> None:
    tasks = BFCLEnv.load_tasks()
    taught = {t.prompt for t in tasks if t.split == "train"}
    assert not [t.id for t in tasks if t.split == "test" and t.prompt in taught]


def test_the_importer_moves_a_shared_opening_to_training() -> None:
    records = [
        {"id": "a", "turns": ["list files", "then x"], "split": "train"},
        {"id": "b", "turns": ["list files", "then y"], "split": "test"},
        {"id": "c", "turns": ["other", "then z"], "split": "test"},
    ]
    moved = script().shared_openings(records)
    assert [r["split"] for r in moved] == ["train", "train", "test"]


def test_each_task_has_one_gold_turn_per_user_turn_over_its_own_tools() -> None:
    env_class = BFCLEnv
    for task in env_class.load_tasks()[:40]:
        gold = json.loads((task.folder() / "hidden" / "gold.json").read_text())["turns"]
        assert len(gold) == 1 + len(task.turns), task.id
        names = {t["function"]["name"] for t in task.tools}
        assert {c["name"] for turn in gold for c in turn} <= names, task.id


def test_the_backends_are_bfcls_with_flat_imports_and_a_notice() -> None:
    backend = ROOT / "seeds" / "bfcl" / "backend"
    notice = (backend / "NOTICE").read_text()
    assert "Apache License, Version 2.0" in notice and "2026.3.23" in notice
    for path in backend.glob("*.py"):
        assert "bfcl_eval" not in path.read_text(), path
    assert set(BFCLEnv.backend_modules()) >= {"gorilla_file_system.py", "long_context.py"}


def test_bfcl_call_strings_become_named_arguments() -> None:
    gold_call = script().gold_call
    params = {"sort": ["file_name"], "mv": ["source", "destination"], "mean": ["numbers"]}
    assert gold_call("sort('report.pdf')", params) == {
        "name": "sort",
        "arguments": {"file_name": "report.pdf"},
    }
    assert gold_call("mv('a', destination='b')", params)["arguments"] == {
        "source": "a",
        "destination": "b",
    }
    assert gold_call("mean(numbers=(1, 2.5))", params)["arguments"] == {"numbers": [1, 2.5]}
    with pytest.raises(ValueError, match="no backend method"):
        gold_call("rm(file_name='x')", params)


def test_bfcl_types_become_json_schema_types() -> None:
    doc = {
        "name": "ls",
        "description": "List.",
        "parameters": {
            "type": "dict",
            "properties": {
                "a": {"type": "boolean"},
                "n": {"type": "float"},
                "xs": {"type": "tuple", "items": {"type": "float"}},
            },
            "required": [],
        },
        "response": {"type": "dict"},
    }
    schema = script().tool_schema(doc)
    params = schema["function"]["parameters"]
    assert params["type"] == "object" and "response" not in schema["function"]
    assert params["properties"]["n"]["type"] == "number"
    assert params["properties"]["xs"] == {"type": "array", "items": {"type": "number"}}
    assert schema["function"]["x-boxgym-kind"] == "read"


@pytest.mark.docker
def test_three_bfcl_tasks_validate_end_to_end(engine: None, tmp_path: Path) -> None:
    from gym._run._validate import validate_env
    from gym._store import Store

    wanted = ["BFCL/multi_turn_base_0", "BFCL/multi_turn_base_101", "BFCL/multi_turn_base_173"]
    checks = validate_env(
        ENV_ID, repeats=1, tasks=wanted, concurrency=3, store=Store(f"sqlite:///{tmp_path}/v.db")
    )
    assert sorted(c.task_id for c in checks) == wanted
    for check in checks:
        assert check.ok, (check.task_id, check.problems)
        assert check.oracle == ["pass"] and check.noop == "fail"
        assert set(check.panel.values()) == {"fail"}


def _last_turn_167(extra: list[dict]) -> dict:
    """BFCL/multi_turn_base_167 played by its gold, ``extra`` calls in its last turn (whose
    gold makes none); the verdict."""
    import gym

    folder = ROOT / "seeds/bfcl/BFCL_multi_turn_base_167"
    gold = json.loads((folder / "hidden/gold.json").read_text())["turns"]
    assert gold[-1] == [] and all(gold[:-1])
    env = gym.make(ENV_ID)
    try:
        env.reset(options={"task": "BFCL/multi_turn_base_167"})
        for turn in [*gold[:-1], extra]:
            for call in turn:
                env.step(call)
            *_, info = env.step({"name": "submit", "arguments": {}})
    finally:
        env.close()
    return info["verdict"]


@pytest.mark.docker
def test_a_last_turn_without_gold_calls_is_checked_for_changes(engine: None) -> None:
    """Nothing after the last turn sees its state: booking again and raising the budget in
    it passed (helper B); a read changes nothing and still passes."""
    raise_budget = {
        "name": "set_budget_limit",
        "arguments": {"access_token": "abc123xyz456", "budget_limit": 99999.0},
    }
    changed = _last_turn_167([raise_budget])
    assert changed["outcome"] == "fail"
    assert (
        "no gold calls, yet the backend's state changed"
        in changed["components"]["turn_5"]["explanation"]
    )
    assert _last_turn_167([])["outcome"] == "pass"


def _integer_call(env: BFCLEnv) -> tuple[gym.Task, int, int, str]:
    """A task, a gold turn and call index, and the name of an ``integer`` argument it gives."""
    for task in env.load_tasks():
        kinds = {
            t["function"]["name"]: t["function"]["parameters"].get("properties", {})
            for t in task.tools
        }
        for i, turn in enumerate(load_gold(task, 1 + len(task.turns)).turns):
            for j, call in enumerate(turn):
                for name, value in call.arguments.items():
                    if type(value) is int and kinds[call.name][name].get("type") == "integer":
                        return task, i, j, name
    raise AssertionError("no gold call gives an integer")


def _gold_with(monkeypatch: pytest.MonkeyPatch, value: object) -> tuple[Any, gym.Task, Any]:
    """The env, a task, and the task's gold with one ``integer`` argument set to ``value``."""
    env = gym.make(ENV_ID).unwrapped
    task, i, j, name = _integer_call(env)
    gold = load_gold(task, 1 + len(task.turns))
    original = gold.turns[i][j].arguments[name]
    gold.turns[i][j].arguments[name] = value(original) if callable(value) else value
    monkeypatch.setattr(toolapi, "load_gold", lambda *_: gold)
    return env, task, (i, j, name, original)


def test_the_gold_replay_gets_an_integral_float_as_an_int_as_an_agents_call_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env, task, (i, j, name, value) = _gold_with(monkeypatch, float)
    try:
        sent = env.gold(task).turns[i][j].arguments[name]
    finally:
        env.close()
    assert sent == value and type(sent) is int


def test_a_gold_call_no_agent_could_make_is_the_tasks_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env, task, _ = _gold_with(monkeypatch, "twelve")
    try:
        with pytest.raises(gym.ConfigError, match=f"{task.id}: its gold call .*hidden/gold.json"):
            env.gold(task)
    finally:
        env.close()
