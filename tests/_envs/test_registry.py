import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import gymnasium
import pytest

import gym
import gym.errors
from gym import ConfigError
from gym.errors import EnvNotFound

ROOT = Path(__file__).resolve().parents[2]


def test_builtin_ids_are_registered_with_gymnasium():
    assert {"boxgym/PyRepo-v0", "boxgym/PyFunc-v0"} <= set(gym.env_ids())
    for env_id in gym.env_ids():
        spec = gymnasium.spec(env_id)
        assert isinstance(spec.entry_point, str) and ":" in spec.entry_point
        assert spec.additional_wrappers[0].entry_point == "gym._envs._wrappers:GradeOnTruncation"
        assert {"max_steps", "max_seconds"} <= set(spec.kwargs)  # budgets the env owns


def test_unknown_id_suggests_the_closest():
    with pytest.raises(EnvNotFound, match="did you mean: boxgym/PyRepo-v0"):
        gym.make("boxgym/PyRepo-v1")
    with pytest.raises(EnvNotFound, match="boxgym/PyFunc-v0"):
        gym.make("boxgym/pyfunc-v0")


def test_a_family_name_suggests_that_familys_ids_and_nothing_close_says_so():
    with pytest.raises(EnvNotFound) as exc:
        gym.make("pyfunc")
    assert str(exc.value) == (
        "no environment 'pyfunc': that is a family; name one of its environments: "
        "boxgym/PyFunc-v0 (`gym env list` shows them all)"
    )
    with pytest.raises(EnvNotFound, match="that is a family; name one of its environments: "):
        gym.make("SQL")
    with pytest.raises(EnvNotFound) as exc:
        gym.make("qqqq")
    assert (
        str(exc.value)
        == "no environment 'qqqq'; no registered id is close; `gym env list` lists them"
    )


def test_ids_must_be_namespaced_and_versioned():
    with pytest.raises(ConfigError, match="must look like"):
        gym.register("NoNamespace-v0", "x:Y")
    with pytest.raises(ConfigError, match="must look like"):
        gym.register("boxgym/Unversioned", "x:Y")


def test_env_list_reports_task_counts_per_split():
    infos = {i.id: i for i in gym.envs()}
    info = infos["boxgym/PyRepo-v0"]
    assert (
        info.family == "pyrepo"
        and info.tasks["train"] >= 1
        and set(info.tasks) == {"train", "eval"}
    )


def test_entry_point_plugins_register_their_environments(tmp_path):
    pkg = tmp_path / "boxgym_demo_plugin"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        textwrap.dedent("""
        import gym

        def register():
            gym.register("demo/Plugin-v0", "environments.mbpp:MBPPEnv", max_steps=3)
    """)
    )
    dist = tmp_path / "boxgym_demo_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: boxgym-demo-plugin\nVersion: 0.1\n"
    )
    (dist / "entry_points.txt").write_text(
        "[boxgym.environments]\ndemo = boxgym_demo_plugin:register\n"
    )
    code = "import gym, gymnasium; print(gymnasium.spec('demo/Plugin-v0').entry_point)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        check=True,
    )
    assert out.stdout.strip() == "environments.mbpp:MBPPEnv"


def test_a_broken_plugin_does_not_break_import(tmp_path):
    dist = tmp_path / "broken-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[boxgym.environments]\nbad = no_such_module:go\n")
    out = subprocess.run(
        [sys.executable, "-c", "import gym; print('imported')"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        check=True,
    )
    assert "imported" in out.stdout and "failed to load" in out.stderr


def fake_plugin(site: Path, dist: str, module: str, body: str) -> None:
    """An installed package with a boxgym.environments entry point (a dist-info on a path)."""
    (site / module).mkdir(parents=True)
    (site / module / "__init__.py").write_text(textwrap.dedent(body))
    info = site / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[boxgym.environments]\n{module} = {module}:register\n")


LIST_ALL = "import json, gym; print(json.dumps([i.model_dump() for i in gym.envs()]))"


def list_envs(site: Path, **env: str) -> tuple[dict[str, dict[str, Any]], str]:
    out = subprocess.run(
        [sys.executable, "-c", LIST_ALL],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": f"{site}:{ROOT}", "PATH": "/usr/bin:/bin", **env},
        check=True,
    )
    return {e["id"]: e for e in json.loads(out.stdout)}, out.stderr


def test_a_plugin_cannot_take_a_boxgym_id_and_the_refusal_names_both(tmp_path: Path) -> None:
    fake_plugin(
        tmp_path, "evil-plugin", "evil_plugin",
        """
        import gym

        def register():
            gym.register("boxgym/PyFunc-v0", "evil_plugin:Env")
        """,
    )  # fmt: skip
    envs, stderr = list_envs(tmp_path)
    assert envs["boxgym/PyFunc-v0"]["entry_point"] == "code (declared in pyfunc/boxgym.toml)"
    broken = envs["plugin evil_plugin (package evil-plugin)"]
    assert broken["broken"]
    problem = broken["problems"][0]
    assert "package evil-plugin cannot register 'boxgym/PyFunc-v0'" in problem
    assert "reserved for boxgym's own environments (this id is held by boxgym)" in problem
    assert "failed to load" in stderr


def test_a_plugin_cannot_take_an_id_another_plugin_holds(tmp_path: Path) -> None:
    for dist, module in [("first-plugin", "aaa_first"), ("second-plugin", "zzz_second")]:
        fake_plugin(
            tmp_path, dist, module,
            f"""
            import gym

            def register():
                gym.register("shared/Thing-v0", "{module}:Env")
            """,
        )  # fmt: skip
    envs, _ = list_envs(tmp_path)
    holder = envs["shared/Thing-v0"]["owner"]
    loser = "second-plugin" if holder == "package first-plugin" else "first-plugin"
    winner = holder.removeprefix("package ")
    broken = next(e for e in envs.values() if e["broken"] and loser in e["id"])
    assert (
        f"package {loser} cannot register 'shared/Thing-v0': that id is already registered "
        f"by package {winner}" in broken["problems"][0]
    )


def test_the_id_rule_is_stated_when_an_id_breaks_it() -> None:
    with pytest.raises(ConfigError) as info:
        gym.register("MBPP2-v0", "x:Y")
    message = str(info.value)
    assert "cannot register 'MBPP2-v0'" in message
    assert "'namespace/Name-vN'" in message and "'boxgym' is reserved" in message
    assert "starting with an uppercase letter" in message


def test_python_code_cannot_take_the_boxgym_namespace_nor_a_held_id() -> None:
    with pytest.raises(gym.errors.IdTaken, match=r"cannot register 'boxgym/Mine-v0'.*reserved"):
        gym.register("boxgym/Mine-v0", "x:Y")
    from gym._envs import _registry

    _registry._owners["taken/Held-v0"] = "package someone-else"
    try:
        with pytest.raises(gym.errors.IdTaken, match=r"already registered by package someone-else"):
            gym.register("taken/Held-v0", "x:Y")
    finally:
        del _registry._owners["taken/Held-v0"]


BAD_FAMILY = """\
from typing import ClassVar

import gym


class BadEnv(gym.CodeEnv):
    family: ClassVar[str] = "bad"
"""


def test_a_bad_task_is_local_and_listed_with_file_field_value_and_what_is_allowed(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "environments" / "bad"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(BAD_FAMILY)
    (folder / "boxgym.toml").write_text('[[env]]\nid = "local/Bad-v0"\nclass = "BadEnv"\n')
    for name, split in [("good", "train"), ("wrong", "prompt")]:
        task = tmp_path / "seeds" / "bad" / name
        task.mkdir(parents=True)
        (task / "task.toml").write_text(f'split = "{split}"\nprompt = "Do it."\n')
    broken_folder = tmp_path / "environments" / "unreadable"
    broken_folder.mkdir()
    (broken_folder / "boxgym.toml").write_text("[[env]\n")
    env = {"GYM_ROOT": str(tmp_path), "GYM_DATA": str(tmp_path / "data")}
    envs, stderr = list_envs(tmp_path / "site", **env)
    bad = envs["local/Bad-v0"]
    assert bad["broken"] and bad["tasks"] == {"train": 1, "eval": 0}
    assert bad["problems"] == [
        f"{tmp_path}/seeds/bad/wrong/task.toml: split = 'prompt' is not a split of family "
        "'bad'; allowed: 'train', 'eval' (a family declares its splits and their roles in "
        "its `splits`; see docs/authoring.md)"
    ]
    assert envs[f"folder {broken_folder}"]["broken"]
    assert not envs["boxgym/PyFunc-v0"]["broken"]  # the others are untouched
    cli = [sys.executable, "-c", "from gym._cli import main; main()", "env", "list"]
    run_env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), **env}
    listed = subprocess.run(cli, capture_output=True, text=True, env=run_env)
    assert listed.returncode == 0 and "boxgym/PyFunc-v0" in listed.stdout
    assert "split = 'prompt'" in listed.stderr
    strict = subprocess.run([*cli, "--strict"], capture_output=True, text=True, env=run_env)
    assert strict.returncode == 1 and "local/Bad-v0" in strict.stdout
