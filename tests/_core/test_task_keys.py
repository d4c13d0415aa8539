"""A task file is checked against its family's key schema as it is loaded.

Unknown keys and values of the wrong type were kept as data and failed open (a check
that silently disappeared) or surfaced at grading as infra_error; each is now a load
problem naming the file, the key, the value and what is allowed.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import gym
import gym.authoring
from gym._core._models import TaskKeys, load_tasks
from gym._grading._code import CodeTaskKeys
from gym._grading._files import file_component
from gym._run._validate import fingerprint

CHECKS = "def check_examples(candidate):\n    assert candidate(2) == 4\n"


def _task(root: Path, body: str, *, checks: str = CHECKS, name: str = "t1") -> Path:
    folder = root / "fam" / name
    (folder / "hidden").mkdir(parents=True)
    (folder / "repo").mkdir()
    (folder / "repo" / "solution.py").write_text("def double(x):\n    return x\n")
    (folder / "hidden" / "checks.py").write_text(checks)
    (folder / "task.toml").write_text('prompt = "Double x."\n' + textwrap.dedent(body))
    return folder


CALLS = """
[grading]
kind = "calls"
module = "solution.py"
entry = "double"
tests = ["check_examples"]
"""


def _problems(root: Path, keys: type[TaskKeys] = CodeTaskKeys) -> list[str]:
    tasks = load_tasks(root, "fam", keys=keys)
    assert not list(tasks), "the bad task must be left out"
    return tasks.problems


def test_a_well_formed_code_task_loads(tmp_path: Path) -> None:
    _task(tmp_path, 'forbidden_tools = ["bash"]\n' + CALLS)
    (task,) = load_tasks(tmp_path, "fam", keys=CodeTaskKeys)
    assert task.data["forbidden_tools"] == ["bash"]  # kept as the file wrote it


@pytest.mark.parametrize(
    ("body", "said"),
    [
        # F3: a string where a list is meant became set("bash") = {b, a, s, h}
        ('forbidden_tools = "bash"\n' + CALLS, "forbidden_tools = 'bash': Input should be a valid list (expected list[str])"),
        # F3: a misspelt key was silently ignored
        ('forbiden_tools = ["bash"]\n' + CALLS, "forbiden_tools = ['bash']: unknown key (allowed: "),
        # F3: a misspelt file check made the check always hold
        (CALLS + '[[files]]\npath = "a.txt"\nequal = "x"\n', "files[0].equal = 'x': unknown key (allowed: contains, equals, exists"),
        # F3: allowed_paths as a string became a tuple of characters
        ('allowed_paths = "calc/**"\n' + CALLS, "allowed_paths = 'calc/**': Input should be a valid tuple"),
        # F5: these loaded and ended as infra_error at grading
        (CALLS + '[[files]]\nequals = "x"\n', "files[0].path: missing, a required key"),
        (CALLS + '[[files]]\npath = "a.txt"\nmatches = "("\n', "files[0].matches = '(': not a regular expression"),
        (CALLS.replace('entry = "double"', 'entry = "double"\ntimeout = "soon"'), "grading.timeout = 'soon': Input should be a valid number (expected float)"),
        ('[grading]\nkind = "pytset"\n', "grading.kind = 'pytset': Input should be 'pytest' or 'calls'"),
    ],
)  # fmt: skip
def test_a_malformed_key_is_a_load_problem(tmp_path: Path, body: str, said: str) -> None:
    folder = _task(tmp_path, body)
    (problem,) = _problems(tmp_path)
    assert problem.startswith(f"{folder / 'task.toml'}: ")
    assert said in problem


def test_a_checks_file_is_read_as_grading_reads_it_without_its_bytecode(tmp_path: Path) -> None:
    """pip installing a plugin compiles hidden/checks.py into hidden/__pycache__/, which
    sorts first: the checks file is the one grading reads, never the bytecode."""
    folder = _task(tmp_path, CALLS)
    (folder / "hidden" / "__pycache__").mkdir()
    (folder / "hidden" / "__pycache__" / "checks.cpython-311.pyc").write_bytes(b"\x00\xa7\r\n")
    (task,) = load_tasks(tmp_path, "fam", keys=CodeTaskKeys)
    assert task.id == "t1"


def test_an_unlisted_check_is_refused(tmp_path: Path) -> None:
    """F4: a check the task does not list never ran (a hardcoded answer passed 1/1)."""
    checks = CHECKS + "\n\ndef check_edges(candidate):\n    assert candidate(0) == 0\n"
    _task(tmp_path, CALLS, checks=checks)
    (problem,) = _problems(tmp_path)
    assert "hidden/checks.py defines ['check_edges'], which grading.tests does not list" in problem


def test_a_listed_check_the_file_does_not_define_is_refused(tmp_path: Path) -> None:
    _task(tmp_path, CALLS.replace('["check_examples"]', '["check_examples", "check_gone"]'))
    (problem,) = _problems(tmp_path)
    assert "names ['check_gone'], which hidden/checks.py does not define" in problem


def test_a_family_declares_its_own_keys(tmp_path: Path) -> None:
    class Keys(CodeTaskKeys):
        expected: str

    _task(tmp_path, 'expected = "4"\n' + CALLS)
    assert [t.data["expected"] for t in load_tasks(tmp_path, "fam", keys=Keys)] == ["4"]
    (problem,) = _problems(tmp_path)  # a code task's keys alone do not know it
    assert "expected = '4': unknown key" in problem


def test_one_bad_task_leaves_its_family_loading(tmp_path: Path) -> None:
    _task(tmp_path, CALLS, name="good")
    _task(tmp_path, 'forbidden_tools = "bash"\n' + CALLS, name="bad")
    tasks = load_tasks(tmp_path, "fam", keys=CodeTaskKeys)
    assert [t.id for t in tasks] == ["good"]
    assert len(tasks.problems) == 1 and "bad/task.toml" in tasks.problems[0]


def test_every_problem_of_a_file_is_named(tmp_path: Path) -> None:
    _task(tmp_path, 'forbidden_tools = "bash"\noracle_delete = 3\n' + CALLS)
    (problem,) = _problems(tmp_path)
    assert "forbidden_tools = 'bash'" in problem and "oracle_delete = 3" in problem


def test_a_shipped_family_refuses_an_unknown_key(tmp_path: Path) -> None:
    """A family's class declares its keys: SQL's ``kind`` is no code task's key."""
    sql = gym.authoring.env_class("boxgym/SQL-v0")
    folder = tmp_path / "fam" / "t1"
    folder.mkdir(parents=True)
    (folder / "task.toml").write_text('prompt = "p"\nkind = "read"\ntabels = ["a"]\n')
    (problem,) = _problems(tmp_path, sql.task_keys)
    assert "tabels = ['a']: unknown key (allowed: " in problem and "tables" in problem


def test_grading_refuses_file_checks_it_does_not_know() -> None:
    """Grading itself never skips a check it cannot read (a task built in memory)."""
    with pytest.raises(gym.ConfigError, match="equal"):
        file_component([{"path": "a.txt", "equal": "x"}], {"a.txt": b"y"})


def test_the_validation_key_covers_files_outside_the_task(tmp_path: Path) -> None:
    """F6: a shared database dump changed, the kept validation result must not be reused."""
    _task(tmp_path, CALLS)
    (task,) = load_tasks(tmp_path, "fam", keys=CodeTaskKeys)
    dump = tmp_path / "fam" / "databases" / "shop.sql"
    dump.parent.mkdir()
    dump.write_text("create table a (x int);\n")
    before = fingerprint(task, 1, "code", [dump])
    assert fingerprint(task, 1, "code", [dump]) == before
    dump.write_text("create table a (x bigint);\n")
    assert fingerprint(task, 1, "code", [dump]) != before


def test_sql_names_a_shared_dump_as_an_input() -> None:
    sql = gym.authoring.env_class("boxgym/SQL-v0")
    task = gym.Task(id="t", family="sql", prompt="p", path="/nowhere/sql/t")
    assert sql.task_inputs(task) == []  # the bundled database: nothing outside the task
    toolapi = gym.authoring.env_class("boxgym/ToolAPI-v0")
    inputs = toolapi.task_inputs(task)
    assert inputs and all(p.suffix == ".py" for p in inputs)
