"""A family's shared files (SQL dumps, the support policy, tool-API backend modules) are
read as regular files of its folder: a symbolic link there is refused, never read through.

Each test copies a family's seeds folder, swaps one shared file (or its folder) for a link
to a file outside, and checks that the family refuses it with a ConfigError that names the
file and says to replace the link, and that the outside file's text reaches nothing: not
the task, not the prompt, not the error. The unchanged copy still loads.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import gym
from environments.sql import SQLEnv
from environments.sql.grading import TaskSpec
from environments.support import SupportEnv, SupportKeys
from environments.toolapi import ToolAPIEnv
from gym._core._models import load_tasks

ROOT = Path(__file__).resolve().parents[2]
SQL_SEEDS = Path(__file__).parent / "sql" / "seeds"  # the fixture family with databases/
SECRET = "OUTSIDE-THE-FAMILY-7f3a9c"
"""The outside file's text: it must never be read."""


def outside(tmp_path: Path, name: str) -> Path:
    """A file outside the family's folder, holding `SECRET`."""
    folder = tmp_path / "outside"
    folder.mkdir(exist_ok=True)
    target = folder / name
    target.write_text(f"-- {SECRET}\n")
    return target


def linked(file: Path, target: Path) -> None:
    """Replace ``file`` (or a folder) of a copied family by a link to ``target``."""
    if file.is_dir():
        shutil.rmtree(file)
    else:
        file.unlink()
    file.symlink_to(target)


def refused(exc: pytest.ExceptionInfo[gym.ConfigError], name: str) -> None:
    """The error names the linked file and says what to do; it holds nothing of outside."""
    message = str(exc.value)
    assert f"{name} is a symbolic link" in message
    assert "replace it by the file" in message
    assert SECRET not in message


def copy(tmp_path: Path, source: Path, family: str) -> Path:
    seeds = tmp_path / "seeds"
    shutil.copytree(source / family, seeds / family)
    return seeds


# -- SQL: seeds/<family>/databases/NAME.sql ---------------------------------------------------


def test_sql_a_shared_dump_that_is_a_link_is_refused(tmp_path: Path) -> None:
    seeds = copy(tmp_path, SQL_SEEDS, "sql")
    linked(seeds / "sql" / "databases" / "concerts.sql", outside(tmp_path, "concerts.sql"))
    tasks = {t.id: t for t in load_tasks(seeds, "sql")}
    task = tasks["own-write"]  # database = "concerts": the shared dump
    assert SECRET not in task.model_dump_json()
    with pytest.raises(gym.ConfigError) as exc:
        TaskSpec.of(task)
    refused(exc, "databases/concerts.sql")
    assert "task own-write" in str(exc.value)
    env = SQLEnv(tasks=list(tasks.values()))
    try:
        with pytest.raises(gym.ConfigError) as exc:
            env.prompt(task)
        refused(exc, "databases/concerts.sql")
    finally:
        env.close()


def test_sql_a_databases_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    seeds = copy(tmp_path, SQL_SEEDS, "sql")
    target = outside(tmp_path, "concerts.sql").parent
    linked(seeds / "sql" / "databases", target)
    task = {t.id: t for t in load_tasks(seeds, "sql")}["own-write-all"]
    with pytest.raises(gym.ConfigError) as exc:
        TaskSpec.of(task)
    refused(exc, "sql/databases")


def test_sql_the_unchanged_copy_still_loads(tmp_path: Path) -> None:
    seeds = copy(tmp_path, SQL_SEEDS, "sql")
    shared = (SQL_SEEDS / "sql" / "databases" / "concerts.sql").read_bytes()
    tasks = {t.id: t for t in load_tasks(seeds, "sql")}
    assert set(tasks) == {"own-read", "own-write", "own-write-all"}
    assert TaskSpec.of(tasks["own-write"]).dump() == shared
    assert TaskSpec.of(tasks["own-write-all"]).dump() == shared
    own = (SQL_SEEDS / "sql" / "own-read" / "db.sql").read_bytes()
    assert TaskSpec.of(tasks["own-read"]).dump() == own


# -- Support: seeds/support/policy.md ---------------------------------------------------------


def support_tasks(seeds: Path) -> list[gym.Task]:
    return list(load_tasks(seeds, "support", keys=SupportKeys))


def test_support_a_policy_that_is_a_link_is_refused(tmp_path: Path) -> None:
    seeds = copy(tmp_path, ROOT / "seeds", "support")
    linked(seeds / "support" / "policy.md", outside(tmp_path, "policy.md"))
    tasks = support_tasks(seeds)
    assert tasks and all(SECRET not in t.model_dump_json() for t in tasks)
    env = SupportEnv(tasks=tasks)
    try:
        with pytest.raises(gym.ConfigError) as exc:
            env.prompt(tasks[0])
    finally:
        env.close()
    refused(exc, "support/policy.md")


def test_support_the_unchanged_copy_still_loads(tmp_path: Path) -> None:
    seeds = copy(tmp_path, ROOT / "seeds", "support")
    tasks = support_tasks(seeds)
    env = SupportEnv(tasks=tasks)
    try:
        prompt = env.prompt(env.task_by_id("count-orders-2026"))
    finally:
        env.close()
    policy = (ROOT / "seeds" / "support" / "policy.md").read_text()
    assert prompt.startswith(policy.rstrip())


# -- Tool API: the backend modules, seeds/<family>/*.py ---------------------------------------


def test_toolapi_a_backend_module_that_is_a_link_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seeds = copy(tmp_path, ROOT / "seeds", "toolapi")
    linked(seeds / "toolapi" / "notebook.py", outside(tmp_path, "notebook.py"))
    monkeypatch.setattr(ToolAPIEnv, "seeds_dir", classmethod(lambda cls: seeds))
    with pytest.raises(gym.ConfigError) as exc:
        ToolAPIEnv.backend_modules()
    refused(exc, "toolapi/notebook.py")


def test_toolapi_the_unchanged_copy_still_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seeds = copy(tmp_path, ROOT / "seeds", "toolapi")
    monkeypatch.setattr(ToolAPIEnv, "seeds_dir", classmethod(lambda cls: seeds))
    shipped = (ROOT / "seeds" / "toolapi" / "notebook.py").read_text()
    assert ToolAPIEnv.backend_modules() == {"notebook.py": shipped}
