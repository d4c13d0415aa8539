"""boxgym/HumanEval-v0: the 164 problems as seed-format tasks, graded through the runner."""

from __future__ import annotations

import math
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

import gymnasium
import pytest

import gym
from environments.humaneval import HumanEvalEnv
from environments.humaneval._tasks import STATED, folder_name, problems
from gym.datasets import tolerant

ENV_ID = "boxgym/HumanEval-v0"


@pytest.fixture
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty data dir, so the tasks are materialised from scratch."""
    monkeypatch.setenv("GYM_DATA", str(tmp_path))
    return tmp_path / "cache" / "humaneval"


def test_load_tasks_gives_164_unique_tasks_in_both_splits(fresh_cache: Path) -> None:
    tasks = HumanEvalEnv.load_tasks()
    assert len(tasks) == 164
    assert len({t.id for t in tasks}) == 164
    assert [t.id for t in tasks] == [f"HumanEval/{n}" for n in range(164)]
    assert Counter(t.split for t in tasks) == {"train": 124, "eval": 40}
    assert {t.split for t in tasks if int(t.id.split("/")[1]) >= 124} == {"eval"}
    for task in tasks:
        assert task.family == "humaneval"
        assert task.tags == {"family": "humaneval", "difficulty": "unknown", "skill": "function"}
        assert task.allowed_paths == ("solution.py",)
        assert task.data["grading"]["kind"] == "calls"
        assert task.data["grading"]["tests"] == ["check_all"]
        assert task.hidden_hash
        folder = task.folder()
        assert folder.parent == fresh_cache
        for rel in ("repo/solution.py", "oracle/solution.py", "hidden/checks.py"):
            assert (folder / rel).is_file(), (task.id, rel)


def test_seed_files_match_the_dataset(fresh_cache: Path) -> None:
    HumanEvalEnv.load_tasks()
    for problem in problems():
        folder = fresh_cache / folder_name(problem["task_id"])
        spec = tomllib.loads((folder / "task.toml").read_text())
        assert spec["id"] == problem["task_id"]
        assert spec["grading"]["entry"] == problem["entry_point"]
        assert problem["prompt"].rstrip() in spec["prompt"]
        oracle = (folder / "oracle/solution.py").read_text()
        assert oracle == problem["prompt"] + problem["canonical_solution"]
        stub = (folder / "repo/solution.py").read_text()
        assert stub.startswith(problem["prompt"])
        assert stub.rstrip().endswith("raise NotImplementedError")
        checks = (folder / "hidden/checks.py").read_text()
        assert tolerant(problem["test"]).strip() in checks  # floats compared within 1e-9
        compile(stub, "stub", "exec")
        compile(checks, "checks", "exec")


def new_process() -> None:
    """The cache is checked once per process: forget that it was (as a new process would)."""
    import environments.humaneval as module

    module._materialised.clear()


def test_what_a_test_checks_and_the_text_contradicts_is_stated(fresh_cache: Path) -> None:
    """A stated task's prompt gains its sentence after the code; the others' are upstream's."""
    for task in HumanEvalEnv.load_tasks():
        sentence = STATED.get(task.id)
        if sentence:
            assert task.prompt.endswith(f"```\n\n{sentence}\n\nCall submit when done.\n")
        else:
            assert task.prompt.endswith("```\n\nCall submit when done.\n"), task.id


def test_cache_is_reused_and_repaired(fresh_cache: Path) -> None:
    new_process()
    HumanEvalEnv.load_tasks()
    checks = fresh_cache / "HumanEval_0" / "hidden" / "checks.py"
    before = checks.stat().st_ino
    new_process()
    HumanEvalEnv.load_tasks()
    assert checks.stat().st_ino == before  # reused, not rewritten
    good = checks.read_bytes()
    checks.write_text("def check_all(candidate):\n    pass\n")
    (fresh_cache / "HumanEval_1" / "task.toml").unlink()
    new_process()
    tasks = HumanEvalEnv.load_tasks()
    assert checks.read_bytes() == good
    assert len(tasks) == 164
    assert not (fresh_cache.parent / ".humaneval-tmp").exists()


def _run_checks(folder: Path, which: str) -> bool:
    """Run a task's checks in-process against its oracle or stub; True if they pass."""
    entry = tomllib.loads((folder / "task.toml").read_text())["grading"]["entry"]
    solution: dict[str, Any] = {"__name__": "solution"}
    exec(compile((folder / which / "solution.py").read_text(), "solution", "exec"), solution)
    checks: dict[str, Any] = {"__name__": "boxgym_checks", "math": math}
    exec(compile((folder / "hidden/checks.py").read_text(), "checks", "exec"), checks)
    try:
        checks["check_all"](solution[entry])
    except (AssertionError, NotImplementedError):
        return False
    return True


@pytest.mark.parametrize(
    "task_id",
    ["HumanEval/32", "HumanEval/33", "HumanEval/38", "HumanEval/50", "HumanEval/53"],
)
def test_checks_are_self_contained(fresh_cache: Path, task_id: str) -> None:
    """Tests that call prompt helpers or the entry point by name work apart from the solution."""
    HumanEvalEnv.load_tasks()
    folder = fresh_cache / folder_name(task_id)
    assert _run_checks(folder, "oracle")
    assert not _run_checks(folder, "repo")


@pytest.mark.docker
@pytest.mark.parametrize("task_id", ["HumanEval/0", "HumanEval/32", "HumanEval/33"])
def test_canonical_passes_and_stub_fails(engine: None, task_id: str) -> None:
    oracle = gym.run_episode(gymnasium.make(ENV_ID), gym.OraclePolicy(), task_id=task_id, seed=0)
    assert oracle.outcome == "pass", oracle.verdict
    assert oracle.verdict is not None and oracle.verdict.verified
    assert oracle.reward == 1.0
    noop = gym.run_episode(gymnasium.make(ENV_ID), gym.NoopPolicy(), task_id=task_id, seed=0)
    assert noop.outcome == "fail", noop.verdict
    assert noop.reward == 0.0
    assert noop.verdict is not None
    assert not noop.verdict.components["hidden_tests"].passed
