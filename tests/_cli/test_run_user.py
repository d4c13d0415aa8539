"""`gym run --user`: who answers the agent in tasks with a simulated user, in the run's lineage.

In process (`typer.testing.CliRunner`): a refusal is the `ConfigError` the command raises,
which the `gym` entry point prints as one line with exit code 2.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import toy_env
from typer.testing import CliRunner

from gym._cli import app
from gym._core._errors import ConfigError
from gym._run._runner import RunConfig


def gym_run(*args: str):
    return CliRunner().invoke(app, ["run", *args], env={"COLUMNS": "200"})


def refusal(out) -> str:
    """The one-line message of a refused run (its ConfigError)."""
    assert isinstance(out.exception, ConfigError), out.output
    return " ".join(str(out.exception).split())


def stored_runs(db: Path) -> list[tuple[str, str]]:
    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        try:
            return list(conn.execute("select id, config from runs"))
        except sqlite3.OperationalError:
            return []


def test_tasks_with_a_simulated_user_refuse_a_run_that_names_no_user(tmp_path):
    db = tmp_path / "runs.db"
    out = gym_run("boxgym/SupportChat-v0", "--policy", "oracle", "--db", f"sqlite:///{db}")
    said = refusal(out)
    assert "chat-cancel-blender" in said and "a simulated user answers the agent" in said
    assert "--user local" in said and "--user openai --user-model NAME" in said
    assert stored_runs(db) == []


def test_user_options_without_a_simulated_user_are_refused(tmp_path):
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    out = gym_run(toy_env.ENV_ID, "--policy", "oracle", "--user-seed", "3", "--db", db)
    assert "need --user local or openai" in refusal(out)
    out = gym_run(toy_env.ENV_ID, "--policy", "oracle", "--user", "robot", "--db", db)
    assert out.exit_code == 2 and "robot" in out.output


def test_the_user_is_in_the_run_config_and_its_id(tmp_path):
    db = tmp_path / "runs.db"
    plain = gym_run(toy_env.ENV_ID, "--policy", "oracle", "--limit", "1", "--db", f"sqlite:///{db}")
    assert plain.exit_code == 0, plain.output
    args = (toy_env.ENV_ID, "--policy", "oracle", "--limit", "1", "--user", "scripted")
    scripted = gym_run(*args, "--db", f"sqlite:///{db}")
    assert scripted.exit_code == 0, scripted.output
    configs = {run_id: config for run_id, config in stored_runs(db)}
    assert len(configs) == 2  # naming a user makes another run
    base = RunConfig(envs=[toy_env.ENV_ID], policy="oracle", limit=1)
    assert base.run_id in configs and '"user' not in configs[base.run_id]  # as before
    with_user = base.model_copy(update={"user": "scripted"})
    assert '"user": "scripted"' in configs[with_user.run_id]
    local = base.model_copy(update={"user": "local", "user_params": {"seed": 4}})
    assert len({base.run_id, with_user.run_id, local.run_id}) == 3
