"""boxgym/MBPP-v0: the original MBPP file, imported through an index, graded by calls."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
import sys
import tomllib
import warnings
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium
import pytest

import gym
import gym.train
from environments.mbpp import MBPPEnv
from gym._validate import ValidationStore, validate_env
from gym.datasets import DatasetMapping, import_dataset

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT / "seeds" / "mbpp"
ENV_ID = "boxgym/MBPP-v0"
BIN = Path(sys.executable).parent
SPLITS = {"prompt": (1, 10), "test": (11, 510), "validation": (511, 600), "train": (601, 974)}

CODEC = {
    "MBPP/40": "returns a collections.Counter",
    "MBPP/88": "returns a collections.Counter",
    "MBPP/367": "its test_setup_code builds trees of the solution's own class Node",
    "MBPP/533": "takes a type object (int, str, float) as an argument",
    "MBPP/601": "its asserts build objects of the solution's own class Pair",
    "MBPP/653": "returns a collections.defaultdict",
    "MBPP/902": "returns a collections.Counter",
    "MBPP/927": "its test_setup_code builds trees of the solution's own class Node",
}
"""Reference solutions the `calls` codec cannot carry today: only exact builtin values
cross, so these fail until branch `grading` extends it (Counter, defaultdict, type
objects, handles for the solution's own objects)."""
PYTHON_VERSION = {
    "MBPP/596": "expects sys.getsizeof values of an older CPython (104, 104, 88; 3.11 gives 88, 88, 72)",
    "MBPP/642": "expects the iteration order of sets of tuples under an older CPython",
}
"""Upstream asserts whose expected values depend on the Python version (SOURCE.md)."""
SLOW = {"MBPP/123"}
"""Its reference solution is quadratic up to 9999 (about 10 s): left to the containers."""


@pytest.fixture(scope="module")
def fresh_data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A data dir that starts empty, so the tasks are rebuilt from the index (once)."""
    data = tmp_path_factory.mktemp("mbpp") / "data"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GYM_DATA", str(data))
        yield data


def test_the_shipped_data_is_the_original_file_with_its_attribution() -> None:
    source = (SEEDS / "SOURCE.md").read_text()
    row = re.search(r"\| `mbpp.jsonl` \| (\d+) \| `([0-9a-f]{64})` \| (\d+) ", source)
    assert row is not None, "SOURCE.md's table of the file is missing"
    data = (SEEDS / "mbpp.jsonl").read_bytes()
    assert len(data) == int(row.group(1))
    assert hashlib.sha256(data).hexdigest() == row.group(2)
    assert data.count(b"\n") == int(row.group(3)) == 974
    assert "CC BY 4.0" in source and "arXiv:2108.07732" in source


def test_974_tasks_in_mbpps_splits_in_natural_order(fresh_data: Path) -> None:
    tasks = MBPPEnv.load_tasks()
    assert [t.id for t in tasks] == [f"MBPP/{n}" for n in range(1, 975)]
    assert Counter(t.split for t in tasks) == {
        "prompt": 10,
        "test": 500,
        "validation": 90,
        "train": 374,
    }
    for task in tasks:
        n = int(task.id.split("/")[1])
        lo, hi = SPLITS[task.split]
        assert lo <= n <= hi, task.id
        assert task.tags == {"family": "mbpp", "source": "mbpp"}
        assert task.data["grading"]["kind"] == "calls"
        assert task.hidden_hash
        assert Path(task.path).is_relative_to(fresh_data)
    assert not getattr(tasks, "problems", [])
    timeouts = {t.id: t.data["grading"]["call_timeout"] for t in tasks}
    assert timeouts.pop("MBPP/123") == 240.0  # its reference takes 6.5 s of CPU
    assert set(timeouts.values()) == {60.0}


def test_prompts_give_the_function_name_and_first_assert(fresh_data: Path) -> None:
    records = [json.loads(line) for line in (SEEDS / "mbpp.jsonl").read_text().splitlines()]
    for task, record in zip(MBPPEnv.load_tasks(), records, strict=True):
        entry = task.data["grading"]["entry"]
        assert task.prompt.startswith(record["text"])
        assert record["test_list"][0] in task.prompt
        assert re.search(rf"\b{entry}\s*\(", record["test_list"][0]), task.id
        stub = (task.folder() / "repo" / "solution.py").read_text()
        assert stub.startswith(f"def {entry}(") and stub.rstrip().endswith("NotImplementedError")
        checks = (task.folder() / "hidden" / "checks.py").read_text()
        assert all(t.strip() in checks for t in record["test_list"])


def test_the_shipped_index_is_what_the_importer_makes_of_the_shipped_data(tmp_path: Path) -> None:
    mapping = DatasetMapping.from_toml(SEEDS / "mapping.toml")
    result = import_dataset(SEEDS / "mbpp.jsonl", mapping, tmp_path, layout="index")
    assert result.problems == [] and len(result.written) == 974
    assert (tmp_path / "mbpp" / "index.json").read_bytes() == (SEEDS / "index.json").read_bytes()
    assert (tmp_path / "mbpp" / "mbpp.jsonl").read_bytes() == (SEEDS / "mbpp.jsonl").read_bytes()


def test_env_list_shows_mbpp_with_its_splits_and_roles(fresh_data: Path) -> None:
    MBPPEnv.load_tasks()  # the cache is built: the command reads it
    env = {**os.environ, "GYM_DATA": str(fresh_data)}
    out = subprocess.run(
        [BIN / "gym", "env", "list", "--json"], env=env, capture_output=True, text=True, check=True
    )
    info = {e["id"]: e for e in json.loads(out.stdout)}[ENV_ID]
    assert info["tasks"] == {"prompt": 10, "test": 500, "validation": 90, "train": 374}
    assert info["splits"] == {
        "prompt": "training",
        "test": "held-out",
        "validation": "held-out",
        "train": "training",
    }
    assert not info["broken"] and info["owner"] == "boxgym"


def test_held_out_splits_follow_the_declared_roles() -> None:
    assert gym.train.split_role(ENV_ID, "train") == "training"
    assert gym.train.split_role(ENV_ID, "prompt") == "training"
    assert gym.train.split_role(ENV_ID, "validation") == "held-out"
    assert gym.train.split_role(ENV_ID, "test") == "held-out"
    assert gym.train.split_role(ENV_ID, "eval") == "held-out"  # not declared: kept out of training


def _checks_pass_through_the_codec(task: gym.Task) -> str:
    """Run a task's hidden checks in-process against its oracle, every value crossing
    through the grading runner's codec as it would between the two processes; '' if
    they pass, else why not."""
    sys.path.insert(0, str(ROOT / "gym" / "_grading" / "runner"))
    try:
        import boxgym_runner as runner
    finally:
        sys.path.pop(0)
    grading = task.data["grading"]
    solution: dict[str, Any] = {"__name__": "solution"}
    with warnings.catch_warnings():  # the dataset's own style (regex escapes) is not at issue
        warnings.simplefilter("ignore")
        code = compile((task.folder() / "oracle/solution.py").read_text(), "solution", "exec")
    exec(code, solution)
    function = solution[grading["entry"]]

    def candidate(*args: Any) -> Any:
        crossed = runner.decode(runner.encode(list(args)))
        return runner.decode(runner.encode(function(*crossed)))

    checks: dict[str, Any] = {"__name__": "boxgym_checks", "math": math}
    exec(compile((task.folder() / "hidden/checks.py").read_text(), "checks", "exec"), checks)
    for name in grading["tests"]:
        try:
            checks[name](candidate)
        except Exception as exc:  # what the runner counts as a failed check
            return f"{name}: {type(exc).__name__}: {exc}"
    return ""


def test_exactly_the_known_reference_solutions_fail_at_the_boundary(fresh_data: Path) -> None:
    """Every oracle passes its checks through today's codec, but the ten listed."""
    failing = {
        t.id: why for t in MBPPEnv.load_tasks() if (why := _checks_pass_through_the_codec(t))
    }
    assert set(failing) == set(CODEC) | set(PYTHON_VERSION), failing
    for task_id in CODEC:
        assert "cannot be checked" in failing[task_id] or "NameError" in failing[task_id]


def _oracle(task_id: str) -> gym.EpisodeResult:
    return gym.run_episode(gymnasium.make(ENV_ID), gym.OraclePolicy(), task_id=task_id, seed=0)


@pytest.mark.docker
def test_an_ordinary_task_passes_with_its_oracle_and_fails_with_noop(engine: None) -> None:
    assert _oracle("MBPP/11").outcome == "pass"
    noop = gym.run_episode(gymnasium.make(ENV_ID), gym.NoopPolicy(), task_id="MBPP/11", seed=0)
    assert noop.outcome == "fail"


@pytest.mark.docker
@pytest.mark.xfail(
    strict=True,
    reason="calls codec: Counter, defaultdict, type objects and the solution's own objects "
    "cannot cross the grading boundary yet (branch grading extends the codec; un-xfail then)",
)
@pytest.mark.parametrize("task_id", sorted(CODEC))
def test_reference_solutions_the_codec_cannot_carry_yet(engine: None, task_id: str) -> None:
    result = _oracle(task_id)
    assert result.outcome == "pass", (task_id, CODEC[task_id], result.verdict)


@pytest.mark.docker
@pytest.mark.xfail(
    strict=True,
    reason="upstream expected values depend on the Python version (SOURCE.md: 596, 642)",
)
@pytest.mark.parametrize("task_id", sorted(PYTHON_VERSION))
def test_upstream_asserts_that_depend_on_the_python_version(engine: None, task_id: str) -> None:
    result = _oracle(task_id)
    assert result.outcome == "pass", (task_id, PYTHON_VERSION[task_id], result.verdict)


ENV_FOLDER = """\
from typing import ClassVar

from environments.pyfunc import PyFuncEnv


class Mbpp20Env(PyFuncEnv):
    family: ClassVar[str] = "mbpp20"
    splits: ClassVar[dict] = {
        "prompt": "training", "test": "held-out", "validation": "held-out", "train": "training"
    }
"""


@pytest.mark.docker
@pytest.mark.timeout(900)  # 80 episodes: about 3 minutes on 2 busy cores
def test_twenty_records_imported_with_the_importer_validate(engine: None, tmp_path: Path) -> None:
    """gym env import, 20 MBPP records of a JSONL file, then --validate in real containers."""
    data = tmp_path / "mbpp20.jsonl"
    data.write_text("".join((SEEDS / "mbpp.jsonl").read_text().splitlines(True)[:20]))
    folder = tmp_path / "environments" / "mbpp20"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(ENV_FOLDER)
    (folder / "boxgym.toml").write_text('[[env]]\nid = "local/Mbpp20-v0"\nclass = "Mbpp20Env"\n')
    env = {**os.environ, "GYM_ROOT": str(tmp_path), "GYM_DATA": str(tmp_path / "data")}
    command = [
        BIN / "gym", "env", "import", str(data), "--mapping", str(SEEDS / "mapping.toml"),
        "--family", "mbpp20", "--out", str(tmp_path / "seeds"), "--validate", "-k", "1",
        "-c", "4", "--json",
    ]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["written"] == [f"MBPP/{n}" for n in range(1, 21)]
    assert result["splits"] == {"prompt": 10, "test": 10}
    checks = result["validation"]
    assert [c["task_id"] for c in checks] == result["written"]
    assert all(c["problems"] == [] and c["oracle"] == ["pass"] for c in checks)
    spec = tomllib.loads((tmp_path / "seeds" / "mbpp20" / "MBPP_11" / "task.toml").read_text())
    assert spec["split"] == "test" and spec["grading"]["entry"] == "remove_Occ"


@pytest.mark.docker
@pytest.mark.benchmark
@pytest.mark.timeout(8 * 3600)
def test_every_task_validates_but_the_known_ten(engine: None) -> None:
    """All 974 tasks (scripts/validate-benchmarks.sh; hours on 2 cores, resumable)."""
    checks = validate_env(
        ENV_ID, repeats=1, concurrency=int(os.environ.get("GYM_CONCURRENCY", "3")),
        store=ValidationStore(),
    )  # fmt: skip
    assert len(checks) == 974
    invalid = {c.task_id: c.problems for c in checks if not c.ok}
    assert set(invalid) == set(CODEC) | set(PYTHON_VERSION), invalid
