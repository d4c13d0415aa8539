import subprocess
import sys
import textwrap

import gymnasium
import pytest

import gym
from gym import ConfigError, EnvNotFound


def test_builtin_ids_are_registered_with_gymnasium():
    assert {"boxgym/PyRepo-v0", "boxgym/PyFunc-v0"} <= set(gym.env_ids())
    for env_id in gym.env_ids():
        spec = gymnasium.spec(env_id)
        assert isinstance(spec.entry_point, str) and ":" in spec.entry_point
        assert spec.additional_wrappers[0].entry_point == "gym._wrappers:GradeOnTruncation"
        assert {"max_steps", "max_seconds"} <= set(spec.kwargs)  # budgets the env owns


def test_unknown_id_suggests_the_closest():
    with pytest.raises(EnvNotFound, match="did you mean: boxgym/PyRepo-v0"):
        gym.make("boxgym/PyRepo-v1")
    with pytest.raises(EnvNotFound, match="boxgym/PyFunc-v0"):
        gym.make("boxgym/pyfunc-v0")


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
            gym.register("demo/Plugin-v0", "environments.pyfunc:PyFuncEnv", max_steps=3)
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
    assert out.stdout.strip() == "environments.pyfunc:PyFuncEnv"


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
