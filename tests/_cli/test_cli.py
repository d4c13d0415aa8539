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
    # every declared split is counted (train/eval unless a family declares others, as MBPP)
    assert all(set(e["tasks"]) == set(e["splits"]) and e["family"] for e in envs)
    # MBPP and BFCL declare their own splits (BFCL: train and a held-out test)
    default = [e for e in envs if e["id"] not in ("boxgym/MBPP-v0", "boxgym/BFCL-MultiTurn-v0")]
    assert all(set(e["tasks"]) == {"train", "eval"} for e in default)


def test_doctor_with_the_engine_down_says_how_to_start_it(tmp_path):
    out = gym_cli("doctor", env={"DOCKER_HOST": f"unix://{tmp_path}/no.sock"})
    assert out.returncode == 1
    assert "scripts/engine.sh" in out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr


def test_a_command_needing_the_engine_fails_in_one_line_when_it_is_down(tmp_path):
    out = gym_cli("images", "list", env={"DOCKER_HOST": f"unix://{tmp_path}/no.sock"})
    assert out.returncode == 1  # a failure, not a usage error (2)
    assert "no Docker engine answers" in out.stderr and "scripts/engine.sh" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.docker
def test_doctor_is_green_on_a_set_up_machine(engine, python_image):
    out = gym_cli("doctor", "--json")
    checks = {c["name"]: c for c in json.loads(out.stdout)}
    assert out.returncode == 0, checks
    assert checks["docker engine"]["ok"] and checks["base image"]["ok"]


@pytest.mark.docker
def test_run_json_reports_the_valid_call_rate_per_env(engine, tmp_path):
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    args = ["run", "boxgym/PyFunc-v0", "--policy", "oracle", "--limit", "1", "--db", db]
    out = gym_cli(*args, "--split", "eval", "--json")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["envs"]["boxgym/PyFunc-v0"]["valid_call_rate"] == 1.0


def test_a_policy_without_constrained_decoding_refuses_the_flag(tmp_path):
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    out = gym_cli("run", "boxgym/PyFunc-v0", "--policy", "oracle", "--unconstrained", "--db", db)
    assert out.returncode != 0
    assert "constrained" in out.stderr and "Traceback" not in out.stderr


def test_run_names_the_executors_it_knows(tmp_path):
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    out = gym_cli("run", "boxgym/PyFunc-v0", "--policy", "noop", "--executor", "k8s", "--db", db)
    assert out.returncode == 2
    assert "'k8s' is not one of local, ray" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "runs.db").exists()  # refused as it was read: nothing stored


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


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--family", "nope"], "--family 'nope' is no red-team family or env id (families: "),
        (["-k", "zzz"], "-k 'zzz' starts no red-team row's name"),
        (["--list", "-k", "zzz"], "-k 'zzz' starts no red-team row's name"),
        (["--family", "sql", "-k", "shell."], "no red-team row matches -k, --family"),
    ],
)
def test_redteam_selecting_no_row_exits_2_naming_what_to_pass(args, said):
    out = gym_cli("redteam", *args)
    assert out.returncode == 2 and out.stdout == "", out
    assert out.stderr.startswith("error: " + said) and "gym redteam --list" in out.stderr


def test_env_validate_with_no_ids_says_to_name_one_or_pass_all():
    out = gym_cli("env", "validate")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == (
        "error: no environments to validate: name an environment id (`gym env list` lists "
        "them) or pass --all\n"
    )


def test_an_error_exits_2_with_its_message_and_json_output_arrives_whole(tmp_path):
    bad = gym_cli("env", "validate", "boxgym/NoSuch-v0")
    assert bad.returncode == 2 and "no environment" in bad.stderr
    with (tmp_path / "out.json").open("w") as fh:  # a file, not a pipe: fully buffered
        done = subprocess.run([GYM, "env", "list", "--json"], stdout=fh, timeout=300)
    assert done.returncode == 0
    assert any(e["id"] == "boxgym/MBPP-v0" for e in json.loads((tmp_path / "out.json").read_text()))


@pytest.mark.parametrize(
    "command",
    [
        ["runs"],
        ["report"],
        ["compare", "a", "b"],
        ["gate", "a", "--rules", "r.toml"],
        ["export", "a", "-o", "x.jsonl"],
    ],
)
def test_a_reading_command_on_a_missing_store_says_so_and_creates_none(tmp_path, command):
    """A mistyped --db names the missing store; it is not created empty ("no runs")."""
    missing = tmp_path / "typo.db"
    out = gym_cli(*command, "--db", f"sqlite:///{missing}")
    assert out.returncode == 2, out.stdout + out.stderr
    assert "no run store" in out.stderr and "Traceback" not in out.stderr
    assert not missing.exists()


def test_env_tasks_lists_the_ids_that_tasks_takes():
    out = gym_cli("env", "tasks", "boxgym/PyFunc-v0", "--split", "eval", "--json")
    assert out.returncode == 0, out.stderr
    tasks = json.loads(out.stdout)
    assert tasks and {t["split"] for t in tasks} == {"eval"}
    assert "armstrong-numbers" in {t["id"] for t in tasks} and all(t["prompt"] for t in tasks)
    suite = gym_cli("env", "tasks", "bundled")
    assert suite.returncode == 2 and "name one of" in suite.stderr
