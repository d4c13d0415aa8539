"""The public API: a small top level, public submodules, and old names that still resolve."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import gym
import gym._core._errors

ROOT = Path(__file__).resolve().parents[1]

PUBLIC_MODULES = (
    "gym.authoring",
    "gym.datasets",
    "gym.errors",
    "gym.grading",
    "gym.images",
    "gym.policies",
    "gym.redteam",
    "gym.runs",
    "gym.sandbox",
    "gym.serve",
    "gym.train",
)

OLD_TOP_LEVEL = (  # gym.__all__ before the layered API: each must still resolve as gym.NAME
    "Change CheckSpec CodeEnv Component ConfigError ContainerEnv DISTRIBUTION DockerSandboxes "
    "EngineUnavailable EnvInfo EnvNotFound EpisodeLimits EpisodeResult ExecResult ExecTimeout "
    "HeldOutError IdTaken refuse_held_out split_role training_tasks "
    "Export Flag GradingError GymError ImageError InfraError Judge LRUCache LocalPolicy "
    "LocalSandboxes Manifest NoopPolicy OpenAIPolicy OraclePolicy PerturbedOraclePolicy Policy "
    "PolicyError SYSTEM_PROMPT Sandbox SandboxConfig SandboxError SandboxPool SandboxProvider "
    "SandboxUnavailable ScriptPolicy StepRecord StoreError Task TaskCheck TaskNotFound TextSpace "
    "ToolCall ToolCallSpace ToolSpec Turn UnsafeArchive UnsafeConfig Verdict __version__ "
    "build_image compose discard ensure_image env_ids env_of envs export_workspace grade_code "
    "grader_config image_dir list_images load_plugins load_tasks make matches policy_from_name "
    "pool_for quote read_tree reap register register_image register_local run_episode "
    "set_pool_size task_files tool tool_calls validate_env"
).split()


def test_all_is_sorted_and_unique():
    assert gym.__all__ == sorted(set(gym.__all__))


def test_every_exported_name_exists():
    missing = [name for name in gym.__all__ if not hasattr(gym, name)]
    assert missing == []


def test_no_private_names_exported():
    assert [n for n in gym.__all__ if n.startswith("_") and n != "__version__"] == []


def test_the_top_level_is_small():
    assert len(gym.__all__) <= 30, (
        f"gym.__all__ has {len(gym.__all__)} names: put the new ones in a public submodule "
        "(docs/api.md) and keep the top level to the words most users say"
    )


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_public_module_is_tidy(name):
    module = importlib.import_module(name)
    assert module.__all__ == sorted(set(module.__all__), key=_sort_key), f"{name}.__all__ unsorted"
    assert [n for n in module.__all__ if not hasattr(module, n)] == []
    opening = " ".join((module.__doc__ or "").strip().splitlines()[:3])
    assert re.search(r"\b[Ff]or (people|authors|code)\b", opening), (
        f"{name}'s docstring must open by saying who the module is for: {opening!r}"
    )


def _sort_key(name: str) -> tuple[int, str]:
    """Constants first, then classes, then functions (ruff's RUF022 order)."""
    if name.isupper():
        return (0, name)
    return (1, name) if name[:1].isupper() else (2, name)


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_public_module_is_an_attribute_of_gym(name):
    assert getattr(gym, name.split(".")[1]) is importlib.import_module(name)


@pytest.mark.parametrize("name", sorted(set(OLD_TOP_LEVEL) - set(gym.__all__)))
def test_a_moved_name_resolves_with_a_warning_naming_its_home(name):
    with pytest.warns(DeprecationWarning, match=rf"gym\.{name}\b") as caught:
        value = getattr(gym, name)
    message = str(caught[0].message)
    if name in gym._MOVED:
        home = gym._MOVED[name]
        assert f"{home}.{name}" in message
        assert home in PUBLIC_MODULES
        assert value is getattr(importlib.import_module(home), name)
    else:
        assert "deprecated" in message and value is not None


def test_the_kept_names_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in gym.__all__:
            getattr(gym, name)
        exec("from gym import *", {})


def test_an_unknown_name_is_still_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        gym.no_such_name  # noqa: B018


def test_every_moved_name_was_in_the_old_top_level():
    assert set(gym._MOVED) | set(gym._RETIRED) == set(OLD_TOP_LEVEL) - set(gym.__all__)


def test_gym_errors_holds_the_whole_tree():
    tree = {
        name
        for name, value in vars(gym._core._errors).items()
        if isinstance(value, type) and issubclass(value, gym._core._errors.GymError)
    }
    assert set(gym.errors.__all__) == tree


def test_nothing_here_uses_a_moved_top_level_name():
    """Code and docs of this repository use the new homes (a moved name warns, and fails tests)."""
    moved = "|".join(sorted({*gym._MOVED, *gym._RETIRED}))
    pattern = re.compile(
        rf"(?<![\w.])gym\.({moved})\b|^\s*from gym import [^\n]*\b({moved})\b", re.M
    )
    found = []
    for top in ("gym", "environments", "tests", "examples", "docs"):
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix not in (".py", ".md") or path.name == "test_exported_members.py":
                continue
            for match in pattern.finditer(path.read_text()):
                line = path.read_text().count("\n", 0, match.start()) + 1
                found.append(f"{path.relative_to(ROOT)}:{line}: {match.group(0).strip()}")
    allowed = {"gym/__init__.py", "docs/api.md"}  # where the old names are explained
    found = [f for f in found if f.split(":")[0] not in allowed]
    assert not found, "use the new home of each name (docs/api.md):\n" + "\n".join(found)


def test_a_family_finds_the_data_folder_publicly(tmp_path, monkeypatch):
    monkeypatch.setenv("GYM_DATA", str(tmp_path / "data"))
    assert gym.datasets.data_dir() == tmp_path / "data"
    assert (tmp_path / "data").is_dir()


def test_import_gym_stays_light():
    code = (
        "import sys, gym\n"
        "heavy = ['torch', 'transformers', 'sqlmodel', 'sqlalchemy', 'matplotlib', 'ray',\n"
        "         'gym.runs', 'gym._store', 'gym._run._runner', 'gym.train']\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]", f"`import gym` loaded {out.stdout.strip()}"
