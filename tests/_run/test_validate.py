"""Environment validation: the toy family's checks, then benchmark scale (selection,
shards, stored results, streamed JSON)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from toy_env import ENV_ID

import gym
import gym.authoring
from gym._run._validate import (
    TaskCheck,
    panel_exemptions,
    parse_shard,
    select_tasks,
)
from gym._store import Store
from gym.runs import validate_env


def test_every_toy_task_validates():
    checks = validate_env(ENV_ID, repeats=2)
    assert [c.task_id for c in checks] == ["add", "greet"]
    for check in checks:
        assert check.ok, check.problems
        assert check.oracle == ["pass", "pass"] and check.noop == "fail"
        assert check.perturbed == "symlink_planted" and check.regrade_identical is True


@pytest.fixture
def toy_image(monkeypatch, tmp_path):
    """A build context for the toy family's image: a fingerprint hashes it."""
    from gym._sandbox import _images

    (tmp_path / "toy-image").mkdir()
    (tmp_path / "toy-image" / "Dockerfile").write_text("FROM scratch\n")
    monkeypatch.setitem(_images._contexts, "toy", tmp_path / "toy-image")
    return tmp_path / "toy-image"


def test_results_land_in_the_run_store_and_a_rerun_skips_them(monkeypatch, tmp_path, toy_image):
    from gym._run import _validate

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    writer = Store(url)
    first = validate_env(ENV_ID, repeats=1, store=writer)
    writer.close()
    assert [c.task_id for c in first] == ["add", "greet"] and all(c.ok for c in first)
    reopened = Store(url)  # the rows are in the database, not in an object
    for check in first:
        (row,) = [r for r in _rows(reopened) if r.task_id == check.task_id]
        assert row.env_id == ENV_ID and row.ok
        assert TaskCheck.model_validate(row.result) == check
    ran = []
    real = _validate.validate_task
    monkeypatch.setattr(
        _validate, "validate_task", lambda *a, **kw: ran.append(a) or real(*a, **kw)
    )
    seen = []
    again = validate_env(ENV_ID, repeats=1, store=reopened, progress=seen.append)
    assert ran == [] and [c.resumed for c in again] == [True, True] and seen == again
    assert [c.model_copy(update={"resumed": False}) for c in again] == first
    other = validate_env(ENV_ID, repeats=2, store=reopened, tasks=["add"])  # other inputs
    assert len(ran) == 1 and not other[0].resumed and len(_rows(reopened)) == 3
    validate_env(ENV_ID, repeats=1, store=reopened, tasks=["add"], resume=False)  # --fresh
    assert len(ran) == 2 and len(_rows(reopened)) == 3  # the same fingerprint: replaced
    reopened.close()


def _rows(store: Store) -> list:
    from sqlmodel import select

    from gym._store import ValidationRow

    with store.session() as s:
        return list(s.exec(select(ValidationRow)))


def test_the_old_validation_store_is_the_run_store_with_a_warning(tmp_path):
    from gym._run._validate import ValidationStore

    with pytest.warns(DeprecationWarning, match="kept in the run store"):
        store = ValidationStore(tmp_path / "v.db")
    assert isinstance(store, Store) and store.url == f"sqlite:///{tmp_path / 'v.db'}"
    store.close()


def test_a_task_whose_oracle_fails_is_reported(monkeypatch):
    import toy_env

    real = toy_env.ToyEnv.load_tasks

    def wrong(cls):
        return [t.model_copy(update={"data": {**t.data, "expected": "7"}}) for t in real()]

    monkeypatch.setattr(toy_env.ToyEnv, "load_tasks", classmethod(wrong))
    (check,) = validate_env(ENV_ID, repeats=1, tasks=["add"])
    assert not check.ok and check.oracle == ["fail"]
    assert check.regrade_identical is None and "oracle run 1: fail" in check.problems[0]


def _toy_panel(monkeypatch, panel, grade_hook=None):
    """The toy family with a panel (and, optionally, a grade that first calls a hook)."""
    import toy_env

    monkeypatch.setattr(toy_env.ToyEnv, "panel_calls", lambda self, task: panel)
    if grade_hook is not None:
        real = toy_env.ToyEnv.grade

        def grade(self, task, final_state, trajectory):
            grade_hook(final_state)
            return real(self, task, final_state, trajectory)

        monkeypatch.setattr(toy_env.ToyEnv, "grade", grade)


def _writes(text):
    return [
        gym.ToolCall(name="write_file", arguments={"path": "answer.txt", "content": text}),
        gym.ToolCall(name="submit", arguments={}),
    ]


def test_a_panel_policy_that_passes_makes_the_task_invalid(monkeypatch):
    _toy_panel(monkeypatch, {"echo": _writes("5\n"), "empty": _writes("")})
    (check,) = validate_env(ENV_ID, repeats=1, tasks=["add"])
    assert check.panel == {"echo": "pass", "empty": "fail"}
    assert not check.ok and not check.infra
    (problem,) = check.problems
    assert problem.startswith("panel echo: pass, a policy that does none of the work must fail")


def test_a_panel_where_every_policy_fails_keeps_the_task_valid(monkeypatch):
    _toy_panel(monkeypatch, {"constant": _writes("0"), "empty": _writes("")})
    checks = validate_env(ENV_ID, repeats=1)
    assert [c.panel for c in checks] == [{"constant": "fail", "empty": "fail"}] * 2
    assert all(c.ok for c in checks), [c.problems for c in checks]


def test_an_exempted_panel_policy_may_pass_and_is_shown(monkeypatch):
    import toy_env

    real = toy_env.ToyEnv.load_tasks
    why = "the answer is the same for every input"

    def exempting(cls):
        return [t.model_copy(update={"data": {**t.data, "panel_exempt": {"echo": why}}})
                for t in real()]  # fmt: skip

    monkeypatch.setattr(toy_env.ToyEnv, "load_tasks", classmethod(exempting))
    _toy_panel(monkeypatch, {"echo": _writes("5"), "empty": _writes("")})
    (check,) = validate_env(ENV_ID, repeats=1, tasks=["add"])
    assert check.ok and check.panel == {"echo": "pass", "empty": "fail"}
    assert check.exempt == {"echo": why}


def test_panel_exemptions_need_a_reason():
    task = gym.Task(id="t", family="f", prompt="p", data={"panel_exempt": {"echo": " "}})
    with pytest.raises(gym.ConfigError, match="panel_exempt must map panel policy names"):
        panel_exemptions(task)
    assert panel_exemptions(task.model_copy(update={"data": {}})) == {}


def test_a_panel_infra_error_is_played_again_then_reported_as_not_validated(
    monkeypatch, tmp_path, toy_image
):
    graded = []

    def broken(final_state):  # our grader fails on this policy's state, every time
        graded.append(final_state.files.get("answer.txt"))
        if final_state.files.get("answer.txt") == b"boom":
            raise RuntimeError("the grading container vanished")

    _toy_panel(monkeypatch, {"boom": _writes("boom"), "empty": _writes("")}, broken)
    store = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    (check,) = validate_env(ENV_ID, repeats=1, tasks=["add"], store=store)
    assert graded.count(b"boom") == 2  # played once more before it is reported
    assert check.panel == {"boom": "infra_error", "empty": "fail"}
    assert check.infra and not check.ok  # not valid, and not kept: a rerun plays it again
    assert "panel boom: infra_error twice" in check.problems[0]
    (again,) = validate_env(ENV_ID, repeats=1, tasks=["add"], store=store)
    assert not again.resumed and graded.count(b"boom") == 4
    store.close()


def test_a_panel_infra_error_that_does_not_repeat_is_the_second_runs_outcome(monkeypatch):
    seen = []

    def flaky(final_state):
        if final_state.files.get("answer.txt") == b"once":
            seen.append(1)
            if len(seen) == 1:
                raise RuntimeError("a transient fault of ours")

    _toy_panel(monkeypatch, {"once": _writes("once")}, flaky)
    (check,) = validate_env(ENV_ID, repeats=1, tasks=["add"])
    assert len(seen) == 2 and check.panel == {"once": "fail"} and check.ok


def _played(monkeypatch):
    """The policies validation plays as episodes (each an agent container), in order."""
    from gym._run import _validate

    played: list[str] = []
    real = _validate._episode

    def episode(env_id, policy, *args, **kwargs):
        played.append(getattr(policy, "calls", None) and policy.calls[0].name or policy.name)
        return real(env_id, policy, *args, **kwargs)

    monkeypatch.setattr(_validate, "_episode", episode)
    return played


def test_a_panel_of_file_writes_is_graded_with_no_agent_container(monkeypatch):
    played = _played(monkeypatch)
    graded = []
    _toy_panel(monkeypatch, {"echo": _writes("5\n"), "empty": _writes("")}, graded.append)
    (check,) = validate_env(ENV_ID, repeats=1, tasks=["add"])
    assert played == ["oracle", "noop", "perturbed-oracle"]  # the panel: no episode
    assert check.panel == {"echo": "pass", "empty": "fail"}
    assert {f.files.get("answer.txt") for f in graded} >= {b"5\n", b""}  # graded as written


def test_a_panel_policy_that_only_submits_takes_noops_outcome(monkeypatch):
    played = _played(monkeypatch)
    bare = [gym.ToolCall(name="submit", arguments={}, id="call-1")]
    _toy_panel(monkeypatch, {"unchanged": bare})
    (check,) = validate_env(ENV_ID, repeats=1, tasks=["add"])
    assert played == ["oracle", "noop", "perturbed-oracle"]
    assert check.panel == {"unchanged": "fail"} == {"unchanged": check.noop} and check.ok


def test_a_panel_script_that_runs_a_command_is_played(monkeypatch):
    played = _played(monkeypatch)
    shell = [
        gym.ToolCall(name="bash", arguments={"command": "echo 5 > answer.txt"}),
        gym.ToolCall(name="submit", arguments={}),
    ]
    _toy_panel(monkeypatch, {"shell": shell})
    (check,) = validate_env(ENV_ID, repeats=1, tasks=["add"])
    assert played == ["oracle", "noop", "perturbed-oracle", "bash"]
    assert check.panel == {"shell": "pass"} and not check.ok


@pytest.mark.parametrize(
    ("path", "size", "graded"),
    [
        ("answer.txt", 3, True),
        ("./answer.txt", 3, False),  # not a plain path: played, as the tool resolves it
        ("../answer.txt", 3, False),
        ("/workspace/answer.txt", 3, False),
        ("notes/other.txt", 3, False),  # outside the allowed paths: played, then flagged
        ("answer.txt", (1 << 20) + 1, False),  # more than write_file takes: played, refused
    ],
)
def test_only_plain_allowed_writes_are_a_scripted_state(path, size, graded):
    env = gym.authoring.env_of(gym.make(ENV_ID))
    task = env.task_by_id("add")
    calls = [
        gym.ToolCall(name="write_file", arguments={"path": path, "content": "5" * size}),
        gym.ToolCall(name="submit", arguments={}),
    ]
    state = env.scripted_state(task, calls)
    assert (state is not None) is graded
    if state is not None:
        assert state.files == {path: b"5" * size} and state.changes[0].path == f"/workspace/{path}"
    assert env.scripted_state(task, calls[:1]) is None  # no submit at the end
    assert env.scripted_state(task, []) is None


BIN = Path(sys.executable).parent
TASKS = [gym.Task(id=f"T/{n}", family="t", prompt="p", split=s) for n, s in
         [(10, "eval"), (2, "train"), (100, "train"), (1, "train"), (11, "eval"), (3, "eval")]]  # fmt: skip


def ids(tasks: list[gym.Task]) -> list[str]:
    return [t.id for t in tasks]


def test_shards_split_a_selection_evenly_and_exactly_once() -> None:
    chosen = select_tasks(TASKS)
    assert ids(chosen) == ["T/1", "T/2", "T/3", "T/10", "T/11", "T/100"]
    shards = [ids(select_tasks(TASKS, shard=(i, 4))) for i in range(1, 5)]
    assert sorted(sum(shards, [])) == sorted(ids(chosen))
    assert [len(s) for s in shards] == [2, 2, 1, 1]
    assert ids(select_tasks(TASKS, split="eval", limit=2)) == ["T/3", "T/10"]
    assert ids(select_tasks(TASKS, limit=4, shard=(2, 2))) == ["T/2", "T/10"]


def test_a_shard_must_be_i_of_n() -> None:
    assert parse_shard("3/4") == (3, 4)
    for bad in ("0/4", "5/4", "1", "a/b", "1/0"):
        with pytest.raises(gym.ConfigError, match="must be I/N"):
            parse_shard(bad)
    with pytest.raises(gym.ConfigError, match=r"no tasks \['T/7'\]"):
        select_tasks(TASKS, ids=["T/7"])


def test_an_infra_error_anywhere_makes_a_result_worth_running_again() -> None:
    assert TaskCheck(task_id="x", oracle=["infra_error"]).infra
    assert TaskCheck(task_id="x", regrade_identical=False).infra
    assert not TaskCheck(task_id="x", oracle=["fail"], problems=["oracle run 1: fail"]).infra


@pytest.mark.docker
@pytest.mark.timeout(600)  # 12 episodes in three commands: 1.5-3 minutes on 2 busy cores
def test_json_streams_one_line_per_task_then_a_summary_and_a_rerun_resumes(
    engine: None, tmp_path: Path
) -> None:
    env = {**os.environ, "GYM_DATA": str(tmp_path)}
    command = [BIN / "gym", "env", "validate", "boxgym/PyFunc-v0", "--limit", "2", "-k", "1",
               "--split", "eval", "--json", "--db", f"sqlite:///{tmp_path / 'runs.db'}"]  # fmt: skip
    first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stdout + first.stderr
    lines = [json.loads(line) for line in first.stdout.splitlines()]
    wanted = ids(select_tasks(gym.make("boxgym/PyFunc-v0").unwrapped.tasks, split="eval", limit=2))
    assert sorted(line["task_id"] for line in lines[:2]) == sorted(wanted)
    assert all(line["ok"] and not line["resumed"] for line in lines[:2])
    for line in lines[:2]:  # the panel per task: every policy failed, as required
        assert {"liar", "echo"} <= set(line["panel"]), line["panel"]
        assert set(line["panel"].values()) == {"fail"} and line["exempt"] == {}
    assert lines[2]["summary"] | {"wall_s": 0} == {
        "tasks": 2, "valid": 2, "invalid": 0, "infra": 0, "resumed": 0, "wall_s": 0,
        "invalid_tasks": [], "envs": {"boxgym/PyFunc-v0": {"tasks": 2, "valid": 2}},
    }  # fmt: skip
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    lines = [json.loads(line) for line in again.stdout.splitlines()]
    assert [line["resumed"] for line in lines[:2]] == [True, True]
    assert lines[2]["summary"]["resumed"] == 2
    fresh = subprocess.run([*command, "--fresh", "--limit", "1"], env=env, capture_output=True,
                           text=True, timeout=900)  # fmt: skip
    assert json.loads(fresh.stdout.splitlines()[0])["resumed"] is False


def test_a_change_to_the_familys_code_invalidates_stored_results(tmp_path: Path) -> None:
    from gym._run._validate import code_hash, fingerprint

    folder = tmp_path / "environments" / "hashed"
    folder.mkdir(parents=True)
    source = "import gym\n\n\nclass HashedEnv(gym.CodeEnv):\n    family = 'hashed'\n"
    (folder / "__init__.py").write_text(source)
    (folder / "boxgym.toml").write_text('[[env]]\nid = "local/Hashed-v0"\nclass = "HashedEnv"\n')
    assert gym.authoring.register_local(tmp_path) == ["local/Hashed-v0"]
    task = TASKS[0]
    before = fingerprint(task, 1, code_hash("local/Hashed-v0"))
    (folder / "__init__.py").write_text(source + "# a fix to the grader\n")
    code_hash.cache_clear()
    assert fingerprint(task, 1, code_hash("local/Hashed-v0")) != before
    assert fingerprint(task, 1, "x") != fingerprint(task, 3, "x")  # the repeats count too


@pytest.mark.docker
def test_a_task_that_stops_validation_is_reported_and_the_others_go_on(
    engine: None, tmp_path: Path
) -> None:
    from gym._run._validate import validate_env

    seeds = Path(__file__).resolve().parents[2] / "seeds" / "pyfunc"
    root = tmp_path / "seeds" / "twotasks"
    for name in ("is-prime", "digital-root"):
        shutil.copytree(seeds / name, root / name)
    shutil.rmtree(root / "digital-root" / "oracle")  # the oracle policy cannot even start
    folder = tmp_path / "environments" / "twotasks"
    folder.mkdir(parents=True)
    (folder / "boxgym.toml").write_text(
        '[[env]]\nid = "local/Two-v0"\nbase = "code"\ntasks = "twotasks"\nimage = "python"\n'
    )
    gym.authoring.register_local(tmp_path)
    checks = {c.task_id: c for c in validate_env("local/Two-v0", repeats=1, concurrency=2)}
    assert checks["is-prime"].ok
    bad = checks["digital-root"]
    assert bad.problems and "validation stopped: ConfigError" in bad.problems[0]
    assert "no oracle/ folder" in bad.problems[0] and not bad.infra  # a task problem: kept


def _local_family(tmp_path: Path, name: str, tasks: dict[str, Path]) -> str:
    """A registered PyFunc family under tmp_path holding copies of the given task folders."""
    for task, source in tasks.items():
        shutil.copytree(source, tmp_path / "seeds" / name / task)
    folder = tmp_path / "environments" / name
    folder.mkdir(parents=True)
    env_id = f"local/{name.capitalize()}-v0"
    (folder / "boxgym.toml").write_text(
        f'[[env]]\nid = "{env_id}"\nbase = "code"\ntasks = "{name}"\nimage = "python"\n'
    )
    gym.authoring.register_local(tmp_path)
    return env_id


@pytest.mark.docker
def test_a_task_whose_checks_only_repeat_its_visible_example_is_invalid(
    engine: None, tmp_path: Path
) -> None:
    """In real containers: checks that only hold the prompt's example let echo pass."""
    seeds = Path(__file__).resolve().parents[2] / "seeds" / "pyfunc"
    env_id = _local_family(tmp_path, "weak", {"digital-root": seeds / "digital-root"})
    task = tmp_path / "seeds" / "weak" / "digital-root"
    (task / "hidden" / "checks.py").write_text(
        "def check_examples(candidate):\n    assert candidate(16) == 7\n"
    )
    spec = (task / "task.toml").read_text()
    (task / "task.toml").write_text(
        spec.replace('"check_examples", "check_edges"', '"check_examples"')
    )
    (check,) = validate_env(env_id, repeats=1)
    assert check.oracle == ["pass"] and check.noop == "fail"
    assert check.panel["echo"] == "pass" and not check.ok
    assert set(check.panel) == {"liar", "echo"} and check.panel["liar"] == "fail"
    assert any(p.startswith("panel echo: pass") for p in check.problems), check.problems
