"""Environments declared in boxgym.toml alone (``base``): what the declaration makes."""

from __future__ import annotations

import json
import shutil
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from forget import forget

import gym
import gym.authoring
from gym._envs import _registry
from gym._envs._declare import class_name
from gym._run._validate import code_hash
from gym.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
PYFUNC_TASK = ROOT / "seeds" / "pyfunc" / "is-prime"
TOOLAPI = ROOT / "seeds" / "toolapi"
LOOKUP = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Look a word up.",
        "parameters": {
            "type": "object",
            "properties": {"word": {"type": "string"}},
            "required": ["word"],
        },
    },
}


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    """A project root holding one PyFunc task; whatever it registers is forgotten after."""
    before = set(_registry._ids), set(_registry._broken)
    shutil.copytree(PYFUNC_TASK, tmp_path / "seeds" / "logs" / "is-prime")
    yield tmp_path
    forget(set(_registry._ids) - before[0])
    for key in set(_registry._broken) - before[1]:
        del _registry._broken[key]


def declare(root: Path, text: str, files: dict[str, str] | None = None) -> Path:
    folder = root / "environments" / "logs"
    folder.mkdir(parents=True)
    (folder / "boxgym.toml").write_text(textwrap.dedent(text))
    for name, content in (files or {}).items():
        (folder / name).write_text(content)
    return folder


def problem_of(root: Path) -> str:
    (problem,) = [p for source, p in _registry._broken.items() if str(root) in source]
    return problem


def test_a_declaration_builds_on_a_family_with_what_it_changes(project):
    declare(
        project,
        """
        [[env]]
        id = "me/Logs-v0"
        base = "code"
        tasks = "logs"
        image = "python"
        system_prompt = "prompt.md"
        drop_tools = ["read_file"]
        sandbox = { memory_mb = 256 }
        splits = { train = "training", eval = "held-out" }
        max_steps = 7
        """,
        {"prompt.md": "You write functions.\n"},
    )
    assert gym.authoring.register_local(project) == ["me/Logs-v0"]
    cls = gym.authoring.env_class("me/Logs-v0")
    assert cls.__mro__[1] is gym.CodeEnv and cls.__name__ == "LogsEnv"
    assert (cls.family, cls.image) == ("logs", "python")
    assert cls.declared_in == project / "environments" / "logs"
    assert cls.sandbox_settings == {**gym.CodeEnv.sandbox_settings, "memory_mb": 256}
    assert [t.id for t in cls.load_tasks()] == ["is-prime"]
    env = gym.authoring.env_of(gym.make("me/Logs-v0"))
    plain = gym.authoring.env_of(gym.make("boxgym/PyFunc-v0"))
    try:
        task = env.tasks[0]
        assert env.max_steps == 7
        assert env.system_prompt_for(task) == "You write functions.\n"
        assert set(env.tool_table(task)) == set(plain.tool_table(task)) - {"read_file"}
    finally:
        env.close()
        plain.close()


def test_declared_tools_add_to_the_familys_or_replace_one_of_the_same_name(project):
    shutil.copytree(TOOLAPI, project / "seeds" / "notes")
    declare(
        project,
        """
        [[env]]
        id = "me/Logs-v0"
        base = "toolapi"
        tasks = "notes"
        tools = "tools.json"
        """,
        {"tools.json": json.dumps([LOOKUP])},
    )
    gym.authoring.register_local(project)
    env = gym.authoring.env_of(gym.make("me/Logs-v0"))
    plain = gym.authoring.env_of(gym.make("boxgym/ToolAPI-v0"))
    try:
        task = env.tasks[0]
        assert set(env.tool_table(task)) == set(plain.tool_table(task)) | {"lookup"}
    finally:
        env.close()
        plain.close()


def test_inline_tools_and_a_prompt_that_is_no_file_are_taken_as_written(project):
    declare(
        project,
        """
        [[env]]
        id = "me/Logs-v0"
        base = "code"
        tasks = "logs"
        system_prompt = "Answer tersely."
        tools = [{ type = "function", function = { name = "lookup", parameters = { type = "object" } } }]
        """,
    )
    gym.authoring.register_local(project)
    cls = gym.authoring.env_class("me/Logs-v0")
    assert cls.system_prompt == "Answer tersely."
    assert [t["function"]["name"] for t in cls.tool_schemas] == ["lookup"]


def test_the_declared_folder_is_part_of_the_validation_hash(project):
    folder = declare(
        project,
        """
        [[env]]
        id = "me/Logs-v0"
        base = "code"
        tasks = "logs"
        system_prompt = "prompt.md"
        """,
        {"prompt.md": "one\n"},
    )
    gym.authoring.register_local(project)
    before = code_hash("me/Logs-v0")
    code_hash.cache_clear()
    (folder / "prompt.md").write_text("two\n")
    assert code_hash("me/Logs-v0") != before


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ('base = "shell"\nfrobnicate = 1', "frobnicate"),
        ('base = "shell"\nclass = "ShellEnv"', "either a class"),
        ('base = "shell"\ntasks = "../etc"', "tasks"),
        ('base = "shell"\ndrop_tools = "bash"', "drop_tools"),
    ],
)
def test_a_wrong_declaration_breaks_its_folder_alone_and_names_the_key(project, entry, says):
    declare(project, f'[[env]]\nid = "me/Logs-v0"\n{entry}\n')
    assert gym.authoring.register_local(project) == []
    assert says in problem_of(project)
    assert "boxgym/PyFunc-v0" in gym.env_ids()


def test_a_base_that_is_no_family_is_listed_broken_with_the_words_to_use(project):
    declare(project, '[[env]]\nid = "me/Logs-v0"\nbase = "nosuch"\n')
    gym.authoring.register_local(project)
    (info,) = [i for i in gym.envs() if i.id == "me/Logs-v0"]
    assert info.broken and "'nosuch' is no family" in info.problems[0]
    assert "shell" in info.problems[0] and "code" in info.problems[0]
    with pytest.raises(ConfigError, match="is no family"):
        gym.make("me/Logs-v0")


def test_a_base_must_be_an_environment_family(project):
    declare(project, '[[env]]\nid = "me/Logs-v0"\nbase = "gym:Task"\n')
    gym.authoring.register_local(project)
    with pytest.raises(ConfigError, match="is not a ContainerEnv"):
        gym.authoring.env_class("me/Logs-v0")


def test_the_shipped_code_environments_are_declarations():
    for env_id, tasks in (("boxgym/PyFunc-v0", "pyfunc"), ("boxgym/PyRepo-v0", "pyrepo")):
        cls = gym.authoring.env_class(env_id)
        assert cls.__mro__[1] is gym.CodeEnv and cls.family == tasks and cls.image == "python"
        assert cls.declared_in == ROOT / "environments" / tasks
        assert not (cls.declared_in / "__init__.py").read_text().count("class ")


def test_class_names_come_from_the_id():
    assert class_name("boxgym/BFCL-MultiTurn-v0") == "BFCLMultiTurnEnv"
