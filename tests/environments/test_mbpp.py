"""boxgym/MBPP-v0: the original MBPP file, imported through an index, graded by calls."""

from __future__ import annotations

import ast
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import tomllib
import types
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium
import pytest

import gym
import gym.train
from environments.mbpp import MBPPEnv
from gym._run._validate import validate_env
from gym._store import Store
from gym.datasets import DatasetMapping, import_dataset, tolerant

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
"""Reference solutions whose values are not plain builtins: the codec carries Counter,
defaultdict and type objects as values, and the solution's own objects as handles (the
checks import its classes from the solution module)."""
SHARED = {"MBPP/367": ["Node"], "MBPP/601": ["Pair"], "MBPP/927": ["Node"]}
"""Tasks whose checks use classes the solution defines: their stub holds those classes."""
CORRECTED = {
    "MBPP/596": "expects sys.getsizeof values of an older CPython (104, 104, 88; 3.8+ gives 88, 88, 72)",
    "MBPP/642": "expects the iteration order of sets of tuples under an older CPython",
}
"""Upstream asserts whose expected values depend on the Python version: the mapping's
`corrections` replace those values only (README.md, "Errata")."""
STRENGTHENED = {
    "MBPP/37": "its three asserts are the same assert",
    "MBPP/203": "all three asserts expect 2",
    "MBPP/339": "all three asserts expect 2",
    "MBPP/667": "all three asserts expect 2",
    "MBPP/674": "all three asserts expect the same string",
}
"""Tasks that echoing the visible assert's expected value passed: the mapping's
`corrections` add one assert on a new input, upstream's asserts unchanged (README.md,
"Added checks")."""
STATED = ("MBPP/431", "MBPP/537", "MBPP/546", "MBPP/602", "MBPP/746", "MBPP/755", "MBPP/761")
"""Tasks whose hidden assert expects a sentinel (None, 'None') neither the text nor the
shown assert says: the mapping's `corrections` add the sentence (README.md, "Stated")."""


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


@pytest.mark.shipped  # the whole shipped data: scripts/validate-shipped.sh
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
    corrections = DatasetMapping.from_toml(SEEDS / "mapping.toml").corrections
    for task, record in zip(MBPPEnv.load_tasks(), records, strict=True):
        record |= corrections[task.id].fields if task.id in corrections else {}
        entry = task.data["grading"]["entry"]
        assert task.prompt.startswith(record["text"])
        assert record["test_list"][0] in task.prompt
        assert re.search(rf"\b{entry}\s*\(", record["test_list"][0]), task.id
        stub = (task.folder() / "repo" / "solution.py").read_text()
        assert stub.startswith(f"def {entry}(") or task.id in SHARED  # which start with a class
        assert f"\ndef {entry}(" in "\n" + stub and stub.rstrip().endswith("NotImplementedError")
        checks = (task.folder() / "hidden" / "checks.py").read_text()
        assert all(tolerant(t).strip() in checks for t in record["test_list"])  # floats: 1e-9


@pytest.mark.shipped  # the whole shipped data: scripts/validate-shipped.sh
def test_the_shipped_index_is_what_the_importer_makes_of_the_shipped_data(tmp_path: Path) -> None:
    mapping = DatasetMapping.from_toml(SEEDS / "mapping.toml")
    result = import_dataset(SEEDS / "mbpp.jsonl", mapping, tmp_path, layout="index")
    assert result.problems == [] and len(result.written) == 974
    assert (tmp_path / "mbpp" / "index.json").read_bytes() == (SEEDS / "index.json").read_bytes()
    assert (tmp_path / "mbpp" / "mbpp.jsonl").read_bytes() == (SEEDS / "mbpp.jsonl").read_bytes()


@pytest.mark.slow
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
    assert gym.train.split_use(ENV_ID, "train") == "training"
    assert gym.train.split_use(ENV_ID, "prompt") == "training"
    assert gym.train.split_use(ENV_ID, "validation") == "held-out"
    assert gym.train.split_use(ENV_ID, "test") == "held-out"
    assert gym.train.split_use(ENV_ID, "eval") == "held-out"  # not declared: kept out of training


class _Handles:
    """One process standing in for both sides: what is not a value crosses by reference,
    as the worker's objects cross to the judge as handles."""

    def __init__(self) -> None:
        self.objects: dict[int, Any] = {}

    def encode_object(self, obj: Any) -> dict[str, Any]:
        self.objects[id(obj)] = obj
        return {"t": "o", "v": id(obj)}

    def decode_object(self, enc: dict[str, Any]) -> Any:
        return self.objects[enc["v"]]


def _wire() -> Any:
    sys.path.insert(0, str(ROOT / "gym" / "_grading" / "runner"))
    try:
        import boxgym_wire
    finally:
        sys.path.pop(0)
    return boxgym_wire


def _run_checks(task: gym.Task, solution_code: str) -> str:
    """Run a task's hidden checks in-process against a solution, every argument and
    result crossing through the grading codec as it would between judge and worker;
    '' if they pass, else why not."""
    wire, side = _wire(), _Handles()
    grading = task.data["grading"]
    solution = types.ModuleType("solution")
    with warnings.catch_warnings():  # the dataset's own style (regex escapes) is not at issue
        warnings.simplefilter("ignore")
        exec(compile(solution_code, "solution", "exec"), solution.__dict__)
    function = getattr(solution, grading["entry"])

    def candidate(*args: Any) -> Any:
        crossed = wire.decode(wire.encode(list(args), side), side)
        return wire.decode(wire.encode(function(*crossed), side), side)

    checks: dict[str, Any] = {"__name__": "boxgym_checks", "math": math}
    exec(compile((task.folder() / "hidden/checks.py").read_text(), "checks", "exec"), checks)
    with pytest.MonkeyPatch.context() as patch:  # `from solution import ...` in the checks
        patch.setitem(sys.modules, "solution", solution)
        for name in grading["tests"]:
            try:
                checks[name](candidate)
            except Exception as exc:  # what the judge counts as a failed check
                return f"{name}: {type(exc).__name__}: {exc}"
    return ""


def _hidden(task: gym.Task) -> str:
    return (task.folder() / "hidden" / "checks.py").read_text()


def _oracle_code(task: gym.Task) -> str:
    return (task.folder() / "oracle" / "solution.py").read_text()


@pytest.mark.shipped  # the whole shipped data: scripts/validate-shipped.sh
def test_every_reference_solution_passes_its_checks_through_the_codec(fresh_data: Path) -> None:
    """Every oracle passes its checks with its values crossing the boundary (974 tasks)."""
    failing = {t.id: why for t in MBPPEnv.load_tasks() if (why := _run_checks(t, _oracle_code(t)))}
    assert failing == {}


def test_values_beyond_plain_builtins_cross_exactly(fresh_data: Path) -> None:
    wire, side = _wire(), _Handles()
    counter = Counter({"b": 400, "a": 400})
    for value in (counter, defaultdict(list, {"k": [1]}), int, (str, float)):
        back = wire.decode(wire.encode(value, side), side)
        assert type(back) is type(value) and back == value
    grouped = wire.decode(wire.encode(defaultdict(list), side), side)
    assert grouped["new"] == [] and grouped.default_factory is list
    tasks = {t.id: t for t in MBPPEnv.load_tasks()}
    for task_id in CODEC:  # a wrong answer of the same kind fails: the checks can fail
        wrong = (
            _oracle_code(tasks[task_id])
            + f"\n{tasks[task_id].data['grading']['entry']} = lambda *a: None\n"
        )
        assert _run_checks(tasks[task_id], wrong).startswith("check_1: AssertionError"), task_id


REORDERED = {
    "MBPP/746": "def sector_area(r, a):\n    if a >= 360:\n        return None\n"
    "    return r ** 2 * a * (22 / 7) / 360\n",
    "MBPP/761": "def arc_length(d, a):\n    if a >= 360:\n        return None\n"
    "    return (a / 360) * (22 / 7) * d\n",
    "MBPP/82": "import math\ndef volume_sphere(r):\n    return r**3 * math.pi * (4 / 3)\n",
}
"""Correct code whose arithmetic runs in another order than the reference's: its floats
differ from the expected ones in the last bits (each failed with ``==``)."""


def test_floats_compare_within_a_tolerance_not_bit_for_bit(fresh_data: Path) -> None:
    tasks = {t.id: t for t in MBPPEnv.load_tasks()}
    for task_id, code in REORDERED.items():
        assert _run_checks(tasks[task_id], code) == "", task_id
        wrong = code.replace("22 / 7", "3.1416").replace("math.pi", "3.1416")
        assert _run_checks(tasks[task_id], wrong).startswith("check_1: AssertionError"), task_id
    for task in tasks.values():  # every task with an `assert A == B` compares with _close
        checks = (task.folder() / "hidden/checks.py").read_text()
        assert ("def _close(" in checks) == ("assert _close(" in checks), task.id
    unchanged = [t.id for t in tasks.values() if "def _close(" not in _hidden(t)]
    assert len(unchanged) < 20, unchanged


@pytest.mark.docker
def test_reordered_arithmetic_passes_through_the_grader(engine: None) -> None:
    write = gym.ToolCall(
        name="write_file", arguments={"path": "solution.py", "content": REORDERED["MBPP/746"]}
    )
    result = gym.run_episode(
        gymnasium.make(ENV_ID), gym.ScriptPolicy([write]), task_id="MBPP/746", seed=0
    )
    assert result.outcome == "pass", result.verdict


def test_checks_build_the_solutions_own_classes_from_the_solution(fresh_data: Path) -> None:
    tasks = {t.id: t for t in MBPPEnv.load_tasks()}
    shared = {}
    for task in tasks.values():
        checks = (task.folder() / "hidden" / "checks.py").read_text()
        imported = re.findall(r"^    from solution import (.+)$", checks, re.M)
        if imported:
            shared[task.id] = imported[0].split(", ")
            assert imported == [imported[0]] * len(task.data["grading"]["tests"])
    assert shared == SHARED
    for task_id, names in SHARED.items():
        stub = (tasks[task_id].folder() / "repo" / "solution.py").read_text()
        assert all(f"class {name}" in stub for name in names)  # the agent sees what is built
        entry = tasks[task_id].data["grading"]["entry"]
        without = _oracle_code(tasks[task_id]).replace(f"class {names[0]}", "class Other")
        assert "ImportError" in _run_checks(tasks[task_id], without), task_id
        assert _run_checks(tasks[task_id], stub).startswith("check_1: NotImplementedError"), entry


def _masked(code: str) -> str:
    """An assert with its constants replaced, to compare everything but the values."""

    class Mask(ast.NodeTransformer):
        def visit_Constant(self, node: ast.Constant) -> ast.AST:
            return ast.Name("_", ast.Load())

    return ast.dump(Mask().visit(ast.parse(code.strip())))


def _records() -> dict[str, dict[str, Any]]:
    return {
        f"MBPP/{r['task_id']}": r
        for r in map(json.loads, (SEEDS / "mbpp.jsonl").read_text().splitlines())
    }


def test_a_sentinel_a_hidden_assert_expects_is_stated_in_the_prompt(fresh_data: Path) -> None:
    """Every task, every split: a check expecting None or 'None' has it said in the prompt.

    Correct code failed MBPP/746 (``sector_area(9, 360) == None``, helper F); a scan of the
    dataset found seven such tasks. A `Stated` correction adds one sentence to the text
    and nothing else: the asserts stay upstream's.
    """
    mapping = DatasetMapping.from_toml(SEEDS / "mapping.toml")
    records = _records()
    unstated = []
    for task in MBPPEnv.load_tasks():
        checks = (task.folder() / "hidden" / "checks.py").read_text()
        sentinel = re.search(r"==\s*(None|'None'|\"None\")\s*$", checks, re.MULTILINE)
        if sentinel and "none" not in task.prompt.lower():
            unstated.append(task.id)
    assert unstated == []
    for task_id in STATED:
        correction, record = mapping.corrections[task_id], records[task_id]
        assert set(correction.fields) == {"text"} and correction.why.startswith("Stated")
        assert correction.fields["text"].startswith(record["text"] + " When ")
        assert task_id in (ROOT / "environments" / "mbpp" / "README.md").read_text()


def test_corrections_change_only_expected_values_and_leave_the_data(fresh_data: Path) -> None:
    mapping = DatasetMapping.from_toml(SEEDS / "mapping.toml")
    assert set(mapping.corrections) == set(CORRECTED) | set(STRENGTHENED) | set(STATED)
    records = _records()
    tasks = {t.id: t for t in MBPPEnv.load_tasks()}
    for task_id in CORRECTED:
        correction = mapping.corrections[task_id]
        upstream, checked = records[task_id]["test_list"], correction.fields["test_list"]
        assert set(correction.fields) == {"test_list"} and len(checked) == len(upstream)
        assert [_masked(c) for c in checked] == [_masked(u) for u in upstream]
        assert checked != upstream and "CPython" in correction.why
        assert checked[0].strip() in tasks[task_id].prompt  # the prompt shows what is checked
        hidden = (tasks[task_id].folder() / "hidden" / "checks.py").read_text()
        assert all(tolerant(c).strip() in hidden for c in checked)
        assert not any(tolerant(u).strip() in hidden for u in upstream if u not in checked)
        assert task_id in (ROOT / "environments" / "mbpp" / "README.md").read_text()
    sizes = [_run_checks(tasks["MBPP/596"], "def tuple_size(t):\n    return 104\n")]
    assert sizes[0].startswith("check_1: AssertionError")  # upstream's value fails now


def _call_and_expected(check: str, entry: str) -> tuple[tuple[Any, ...], Any]:
    """(arguments, expected value) of ``assert entry(ARGS) == EXPECTED``."""
    node = ast.parse(check.strip()).body[0]
    assert isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare)
    call, (expected,) = node.test.left, node.test.comparators
    assert isinstance(call, ast.Call) and ast.unparse(call.func) == entry
    assert isinstance(node.test.ops[0], ast.Eq)
    return tuple(ast.literal_eval(a) for a in call.args), ast.literal_eval(expected)


def test_added_checks_keep_upstreams_asserts_and_expect_what_the_reference_returns(
    fresh_data: Path,
) -> None:
    mapping = DatasetMapping.from_toml(SEEDS / "mapping.toml")
    records, tasks = _records(), {t.id: t for t in MBPPEnv.load_tasks()}
    readme = (ROOT / "environments" / "mbpp" / "README.md").read_text()
    for task_id in STRENGTHENED:
        correction, task = mapping.corrections[task_id], tasks[task_id]
        upstream, checked = records[task_id]["test_list"], correction.fields["test_list"]
        assert set(correction.fields) == {"test_list"} and correction.why.startswith("Added")
        assert checked[: len(upstream)] == upstream and len(checked) == len(upstream) + 1
        assert upstream[0].strip() in task.prompt  # the prompt still shows upstream's first
        args, expected = _call_and_expected(checked[-1], task.data["grading"]["entry"])
        reference: dict[str, Any] = {}
        exec(compile(_oracle_code(task), "reference", "exec"), reference)
        assert reference[task.data["grading"]["entry"]](*args) == expected, task_id
        hidden = (task.folder() / "hidden" / "checks.py").read_text()
        assert (
            tolerant(checked[-1]).strip() in hidden
            and task.data["grading"]["tests"][-1] == "check_4"
        )
        assert task_id in readme


def _panel_outcomes(task: gym.Task) -> dict[str, str]:
    """Every trivial answer (each constant, the echo, None), run in-process against the
    task's checks through the codec: policy -> '' if it passes, else why."""
    from gym._envs._panel import trivial_sources

    return {name: _run_checks(task, source) for name, source in trivial_sources(task).items()}


def test_no_trivial_policy_passes_a_task_but_where_the_reference_is_a_constant(
    fresh_data: Path,
) -> None:
    """Constants, the visible assert echoed and None fail every task's checks (974 tasks),
    but the exemptions, each shown to be a constant reference solution."""
    from environments.mbpp import PANEL_EXEMPT

    tasks = {t.id: t for t in MBPPEnv.load_tasks()}
    passing = {}
    for task in tasks.values():
        if passed := sorted(n for n, why in _panel_outcomes(task).items() if not why):
            passing[task.id] = passed
    assert passing == {t: sorted(n for n in e if n in _panel_outcomes(tasks[t]))
                       for t, e in PANEL_EXEMPT.items()}  # fmt: skip
    for task_id, exempt in PANEL_EXEMPT.items():
        assert tasks[task_id].data["panel_exempt"] == exempt
    reference: dict[str, Any] = {}
    exec(compile(_oracle_code(tasks["MBPP/816"]), "816", "exec"), reference)
    assert {reference["clear_tuple"](t) for t in [(), (1,), (9, "a", None)]} == {()}
    exec(compile(_oracle_code(tasks["MBPP/899"]), "899", "exec"), reference)
    arrays = [[1, 2, 3], [3, 2, 1], [5, 1, 5, 1, 9], [9, 1, 8, 2, 7, 3], [4]]
    assert {reference["check"](a, len(a)) for a in arrays} == {True}


def _oracle(task_id: str) -> gym.EpisodeResult:
    return gym.run_episode(gymnasium.make(ENV_ID), gym.OraclePolicy(), task_id=task_id, seed=0)


@pytest.mark.docker
def test_an_ordinary_task_passes_with_its_oracle_and_fails_with_noop(engine: None) -> None:
    assert _oracle("MBPP/11").outcome == "pass"
    noop = gym.run_episode(gymnasium.make(ENV_ID), gym.NoopPolicy(), task_id="MBPP/11", seed=0)
    assert noop.outcome == "fail"


@pytest.mark.docker
@pytest.mark.parametrize("task_id", sorted(CODEC) + sorted(CORRECTED))
def test_reference_solutions_beyond_plain_values_and_corrected_tasks_pass(
    engine: None, task_id: str
) -> None:
    result = _oracle(task_id)
    why = CODEC.get(task_id) or CORRECTED[task_id]
    assert result.outcome == "pass", (task_id, why, result.verdict)


ENV_FOLDER = """\
from typing import ClassVar

import gym


class Mbpp20Env(gym.CodeEnv):
    family: ClassVar[str] = "mbpp20"
    image: ClassVar[str] = "python"
    splits: ClassVar[dict] = {
        "prompt": "training", "test": "held-out", "validation": "held-out", "train": "training"
    }
"""


@pytest.mark.docker
@pytest.mark.shipped
@pytest.mark.timeout(1200)  # 140 episodes (60 of them the panel): 40 s, 4 min on busy cores
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
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1100)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["written"] == [f"MBPP/{n}" for n in range(1, 21)]
    assert result["splits"] == {"prompt": 10, "test": 10}
    checks = result["validation"]
    assert [c["task_id"] for c in checks] == result["written"]
    assert all(c["problems"] == [] and c["oracle"] == ["pass"] for c in checks)
    assert all(c["panel"] and set(c["panel"].values()) == {"fail"} for c in checks)
    spec = tomllib.loads((tmp_path / "seeds" / "mbpp20" / "MBPP_11" / "task.toml").read_text())
    assert spec["split"] == "test" and spec["grading"]["entry"] == "remove_Occ"


@pytest.mark.docker
@pytest.mark.benchmark
@pytest.mark.timeout(8 * 3600)
def test_every_task_validates(engine: None) -> None:
    """All 974 tasks (scripts/validate-benchmarks.sh; about 40 minutes on 2 cores, resumable)."""
    checks = validate_env(
        ENV_ID, repeats=1, concurrency=int(os.environ.get("GYM_CONCURRENCY", "3")),
        store=Store(),
    )  # fmt: skip
    assert len(checks) == 974
    invalid = {c.task_id: c.problems for c in checks if not c.ok}
    assert invalid == {}
