"""A declaration reads its tools and system prompt only as regular files of its folder."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from forget import forget

import gym.authoring
from gym._envs import _registry
from gym.errors import ConfigError

TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    """A project root; whatever it registers is forgotten after."""
    before = set(_registry._ids), set(_registry._broken)
    (tmp_path / "seeds" / "logs").mkdir(parents=True)
    yield tmp_path
    forget(set(_registry._ids) - before[0])
    for key in set(_registry._broken) - before[1]:
        del _registry._broken[key]


def declare(root: Path, key: str, value: str) -> Path:
    folder = root / "environments" / "logs"
    folder.mkdir(parents=True)
    entry = f'[[env]]\nid = "me/Logs-v0"\nbase = "code"\ntasks = "logs"\n{key} = {value!r}\n'
    (folder / "boxgym.toml").write_text(entry)
    return folder


@pytest.mark.parametrize("value", ["OUTSIDE", "../tools.json", "sub/tools.json"])
def test_a_tools_path_outside_the_folder_is_refused(root: Path, value: str) -> None:
    outside = root / "tools.json"
    outside.write_text(json.dumps(TOOLS))
    declare(root, "tools", str(outside) if value == "OUTSIDE" else value)
    assert gym.authoring.register_local(root) == []
    (problem,) = [p for source, p in _registry._broken.items() if str(root) in source]
    assert "tools: " in problem and "file name of the environment's folder" in problem


@pytest.mark.parametrize(("key", "name"), [("tools", "tools.json"), ("system_prompt", "prompt.md")])
def test_a_linked_file_of_the_folder_is_refused_not_followed(
    root: Path, key: str, name: str
) -> None:
    outside = root / "host.txt"
    outside.write_text(json.dumps(TOOLS))
    folder = declare(root, key, name)
    (folder / name).symlink_to(outside)
    gym.authoring.register_local(root)
    with pytest.raises(ConfigError, match=f"{key} = '{name}': .*{name} is a symbolic link"):
        gym.authoring.env_class("me/Logs-v0")


def test_regular_files_of_the_folder_are_read(root: Path) -> None:
    folder = declare(root, "tools", "tools.json")
    (folder / "tools.json").write_text(json.dumps(TOOLS))
    gym.authoring.register_local(root)
    cls = gym.authoring.env_class("me/Logs-v0")
    assert "lookup" in [t["function"]["name"] for t in cls.tool_schemas]
