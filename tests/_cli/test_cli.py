import json
import os
import subprocess
import sys

import pytest

GYM = os.path.join(os.path.dirname(sys.executable), "gym")


def gym_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [GYM, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def test_env_list_json_has_one_object_per_env():
    out = gym_cli("env", "list", "--json")
    assert out.returncode == 0, out.stderr
    envs = json.loads(out.stdout)
    ids = {e["id"] for e in envs}
    assert "boxgym/PyRepo-v0" in ids
    assert all(set(e["tasks"]) == {"train", "eval"} and e["family"] for e in envs)


def test_doctor_with_the_engine_down_says_how_to_start_it(tmp_path):
    out = gym_cli("doctor", env={"DOCKER_HOST": f"unix://{tmp_path}/no.sock"})
    assert out.returncode == 1
    assert "scripts/engine.sh" in out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr


def test_a_command_needing_the_engine_fails_in_one_line_when_it_is_down(tmp_path):
    out = gym_cli("images", "list", env={"DOCKER_HOST": f"unix://{tmp_path}/no.sock"})
    assert out.returncode == 2
    assert "no Docker engine answers" in out.stderr and "scripts/engine.sh" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.docker
def test_doctor_is_green_on_a_set_up_machine(engine, python_image):
    out = gym_cli("doctor", "--json")
    checks = {c["name"]: c for c in json.loads(out.stdout)}
    assert out.returncode == 0, checks
    assert checks["docker engine"]["ok"] and checks["base image"]["ok"]


@pytest.mark.docker
@pytest.mark.parametrize("command", [["run", "boxgym/PyFunc-v0", "--policy", "noop"], ["redteam"]])
def test_an_unknown_runtime_is_refused_with_how_to_add_it(engine, command):
    out = gym_cli(*command, "--runtime", "nosuchruntime")
    assert out.returncode == 2
    assert "no runtime 'nosuchruntime'" in out.stderr and "scripts/gvisor.sh" in out.stderr


def test_redteam_lists_its_rows_without_running_them():
    out = gym_cli("redteam", "--list", "--family", "sql")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines and all("boxgym/SQL-v0" in line for line in lines)
    assert any("sql.privilege_escalation[roles]" in line for line in lines)
