"""docs/authoring.md, followed to the letter, and the example plugin package."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def doc_commands() -> list[str]:
    """The shell commands of docs/authoring.md's numbered steps 1 and 2, in order."""
    text = (ROOT / "docs" / "authoring.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    return [line.strip() for block in blocks[:2] for line in block.splitlines() if line.strip()]


def test_scaffold_then_validate_exactly_as_the_docs_say(engine, tmp_path):
    commands = doc_commands()
    assert commands == [
        ".venv/bin/gym env new my_env --family code",
        ".venv/bin/gym env validate boxgym/MyEnv-v0",
    ]
    (tmp_path / ".venv").symlink_to(BIN.parent)  # the docs run from a checkout root
    env = {**os.environ, "GYM_ROOT": str(tmp_path), "GYM_DATA": str(tmp_path / "data")}
    for command in commands:
        done = subprocess.run(
            command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
        )
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    assert "1/1 tasks valid" in done.stdout
    listed = subprocess.run(
        [BIN / "gym", "env", "list", "--json"], env=env, capture_output=True, text=True
    )
    assert "boxgym/MyEnv-v0" in listed.stdout


def test_example_plugin_registers_through_its_entry_point(engine, tmp_path):
    target = tmp_path / "site"
    subprocess.run(
        [
            BIN / "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(ROOT / "examples" / "boxgym-example-plugin"),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    env = {**os.environ, "PYTHONPATH": str(target), "GYM_DATA": str(tmp_path / "data")}
    listed = subprocess.run(
        [BIN / "gym", "env", "list", "--json"], env=env, capture_output=True, text=True, check=True
    )
    ids = {e["id"]: e for e in json.loads(listed.stdout)}
    assert ids["example/Greeting-v0"]["tasks"] == {"train": 1, "eval": 0}
    done = subprocess.run(
        [BIN / "gym", "env", "validate", "example/Greeting-v0", "-k", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1/1 tasks valid" in done.stdout


@pytest.mark.parametrize(
    ("family", "env_id"), [("sql", "boxgym/MyDb-v0"), ("api", "boxgym/MyApi-v0")]
)
def test_sql_and_api_scaffolds_validate(engine, tmp_path, family, env_id):
    env = {**os.environ, "GYM_ROOT": str(tmp_path), "GYM_DATA": str(tmp_path / "data")}
    name = env_id.split("/")[1].removesuffix("-v0").replace("My", "my_").lower()
    subprocess.run(
        [BIN / "gym", "env", "new", name, "--family", family],
        env=env,
        check=True,
        capture_output=True,
    )
    done = subprocess.run(
        [BIN / "gym", "env", "validate", env_id, "-k", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1/1 tasks valid" in done.stdout
