"""Families ship their own red-team attacks: the bundled SQL, Shell, Support and ToolAPI
ones, a plugin's.

`gym redteam` loads the attack module each family names (its boxgym.toml's ``attacks``),
groups environments by the kind each manifest declares, and shows the rows in the order
they had when the family attacks lived in gym/ (boxgym's shared attacks, the families',
then the harness's faults), so that every row keeps its name and its environment.
"""

from __future__ import annotations

import doctest
import json
import os
import subprocess
import sys
from pathlib import Path

import plugin_family
import pytest

import gym.authoring
import gym.grading
import gym.redteam
from gym._envs._registry import attack_modules, kind_of
from gym._redteam._core import plan
from gym._redteam._suite import HARNESS, SHARED

ROOT = Path(__file__).resolve().parents[2]
GYM = Path(sys.executable).parent / "gym"
KINDS = {  # the table gym/_redteam/_core.py held before the manifests did
    "boxgym/PyRepo-v0": "code",
    "boxgym/PyFunc-v0": "code",
    "boxgym/HumanEval-v0": "code",
    "boxgym/MBPP-v0": "code",
    "boxgym/SQL-v0": "sql",
    "boxgym/Support-v0": "support",
    "boxgym/Learn-v0": "boxgym/Learn-v0",
}


def test_each_manifest_declares_the_kind_the_table_held():
    assert {env_id: kind_of(env_id) for env_id in KINDS} == KINDS


BUNDLED = [
    "environments.sql.attacks",
    "environments.shell.attacks",
    "environments.support.attacks",
    "environments.toolapi.attacks",
]
"""The bundled families' attack modules, in the order of their env ids."""


def test_the_bundled_families_name_their_attack_modules():
    bundled = attack_modules(bundled=True)
    assert bundled == BUNDLED
    registered = gym.redteam.registered()
    for prefix, env_ids in (
        ("sql.", {"boxgym/SQL-v0"}),
        ("shell.", {"boxgym/Shell-v0"}),
        ("support.", {"boxgym/Support-v0", "boxgym/SupportChat-v0"}),
        ("toolapi.", {"boxgym/ToolAPI-v0", "boxgym/BFCL-MultiTurn-v0"}),
    ):
        rows = [a for name, a in registered.items() if name.startswith(prefix)]
        assert rows and all(len(a.envs) == 1 and a.envs[0] in env_ids for a in rows), prefix
        assert {a.envs[0] for a in rows} == env_ids, prefix


ORDER = """
import json, sys
import gym._redteam._core as core
seen, plain = [], core.register
def register(*attacks):
    seen.append(sys._getframe(1).f_globals["__name__"])
    plain(*attacks)
core.register = register  # before any module of attacks binds it
from gym._redteam._suite import load_builtin
load_builtin()
print(json.dumps(list(dict.fromkeys(seen))))
"""


def test_the_modules_register_shared_then_families_then_harness():
    """The order picks each row's representative env: it must be the one it always was."""
    out = subprocess.run(
        [sys.executable, "-c", ORDER], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert json.loads(out.stdout) == [*SHARED, *BUNDLED, *HARNESS]


def test_a_family_selects_its_rows_by_its_declared_kind():
    gym.redteam.registered()
    envs = {env_id for _, env_id, _ in plan(families=["support"])}
    assert envs == {"boxgym/Support-v0", "boxgym/SupportChat-v0"}  # the chat rows


def test_the_facades_example_runs():
    failed, attempted = doctest.testmod(gym.redteam, raise_on_error=False)
    assert attempted >= 3 and failed == 0


# -- a plugin family's attack ---------------------------------------------------------------


def _gym(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`gym` in a project whose root holds the plugin family (as its user would run it)."""
    env = {**os.environ, "GYM_ROOT": str(plugin_family.ROOT), "GYM_DATA": str(tmp_path)}
    return subprocess.run(
        [str(GYM), *args], env=env, capture_output=True, text=True, timeout=240, cwd=ROOT
    )


def test_gym_redteam_lists_and_runs_a_plugin_familys_attack(tmp_path):
    listed = _gym("redteam", "--list", "--family", "notes", tmp_path=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == ["attack", plugin_family.ATTACK, plugin_family.ENV_ID]
    done = _gym("redteam", "--only", "notes.", "--json", tmp_path=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = json.loads(done.stdout)["rows"]
    assert (row["name"], row["env"], row["held"]) == (
        plugin_family.ATTACK,
        plugin_family.ENV_ID,
        True,
    )
    assert "start_note_changed" in row["observed"]


def test_the_bundled_rows_stay_when_a_plugin_adds_its_own(tmp_path):
    plain = subprocess.run(
        [str(GYM), "redteam", "--list"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, "GYM_DATA": str(tmp_path)},
    ).stdout.splitlines()
    with_plugin = _gym("redteam", "--list", tmp_path=tmp_path).stdout.splitlines()
    assert with_plugin[:-1] == plain  # a plugin's rows come last and move none of boxgym's
    assert plugin_family.ENV_ID in with_plugin[-1]


@pytest.mark.parametrize("flags_kept", [True, False])
def test_the_plugin_row_fails_when_its_family_stops_flagging(monkeypatch, flags_kept):
    """Through the suite's API: the row holds only while the grader raises the flag."""
    with plugin_family.registered():
        if not flags_kept:
            env_class = type(gym.authoring.env_of(gym.make(plugin_family.ENV_ID)))
            graded = env_class.grade

            def unflagged(self, task, final_state, trajectory):
                verdict = graded(self, task, final_state, trajectory)
                return gym.grading.compose(verdict.components, [], grader="notes", version="1")

            monkeypatch.setattr(env_class, "grade", unflagged)
        report = gym.redteam.run_suite(names=["notes."], seed=7)
    (row,) = report.rows
    assert row.name == plugin_family.ATTACK and row.env == plugin_family.ENV_ID
    assert row.held is flags_kept, row.observed
