"""One error path for the CLI (issue 28, defects 1, 2, 6 and 10): each reproduction runs
the real `gym` and checks the exit code, the one error line (and at most a hint), its
literal text, and that no traceback and no stored run come out of it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import typer
from rich.text import Text

from gym._cli import app
from gym._cli._app import command, run_cli
from gym._policy import POLICIES
from gym._store import RunRow, Store

GYM = os.path.join(os.path.dirname(sys.executable), "gym")
ENV = "boxgym/PyFunc-v0"
HOSTILE = "two \x1b[2J\u202e\x07 [red]x[/]"
"""A label holding a clear-screen escape, a right-to-left override, a bell and markup."""


def gym_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "GYM_DB_URL")}
    return subprocess.run(
        [GYM, *args],
        capture_output=True,
        text=True,
        env={**base, "COLUMNS": "200", **(env or {})},
        cwd=cwd,
        timeout=300,
    )


def error_line(out: subprocess.CompletedProcess[str], code: int) -> str:
    """The one ``error:`` line of a failed command: after it at most a hint, no traceback."""
    assert out.returncode == code, out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    lines = out.stderr.splitlines()
    at = [i for i, line in enumerate(lines) if line.startswith("error: ")]
    assert len(at) == 1, out.stderr
    hint = lines[at[0] + 1 :]
    assert len(hint) <= 1 and all("--help" in line for line in hint), out.stderr
    return lines[at[0]]


def only_error(out: subprocess.CompletedProcess[str], code: int) -> str:
    """The error line of a command refused before it started: stderr holds nothing else."""
    line = error_line(out, code)
    assert out.stderr.splitlines()[0] == line, out.stderr
    return line


def _run_row(run_id: str, label: str) -> RunRow:
    now = time.time()
    return RunRow(
        id=run_id,
        created_at=now,
        updated_at=now,
        config={"envs": [ENV]},
        policy="noop",
        boxgym_version="0",
        label=label,
    )


@pytest.fixture
def store(tmp_path: Path) -> str:
    """A store holding two runs whose ids share the prefix ``abc``, one with a hostile label."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    runs = Store(url)
    runs.ensure_run(_run_row("abc00001", "one"))
    runs.ensure_run(_run_row("abc00002", HOSTILE))
    runs.close()
    return url


# -- 1: text we did not write is never read as markup -------------------------------


def test_policy_replay_without_replay_is_one_line_error(tmp_path):
    """Defect 1: the message holds ``[/EPISODE]``, which rich read as a closing tag."""
    db = tmp_path / "runs.db"
    out = gym_cli("run", ENV, "--policy", "replay", "--db", f"sqlite:///{db}")
    assert only_error(out, 2) == "error: --policy replay needs --replay RUN[/EPISODE]"
    assert not db.exists()


def test_gate_help_keeps_the_double_brackets_of_its_rules():
    """Defect 1: `gym gate --help` showed "TOML file of [] tables"."""
    out = gym_cli("gate", "--help")
    assert out.returncode == 0, out.stderr
    assert "TOML file of [[rule]] tables." in out.stdout


def test_an_install_hint_keeps_its_extra_in_brackets(tmp_path):
    """Defect 1: ``pip install -e '.[train]'`` printed as ``pip install -e '.'``."""
    shim = tmp_path / "shim" / "torch"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text('raise ImportError("not here", name="torch")\n')
    args = ["train", "grpo", ENV, "--steps", "1", "--db", f"sqlite:///{tmp_path / 'r.db'}"]
    out = gym_cli(*args, env={"PYTHONPATH": str(tmp_path / "shim")})
    assert error_line(out, 2) == "error: training needs torch: pip install -e '.[train]'"


def _helps(cmd: Any, path: str = "gym") -> dict[tuple[str, str], str]:
    """(command path, name) -> help text, for every command and parameter of the tree."""
    found = {(path, ""): cmd.help or ""}
    found |= {(path, p.name): p.help for p in cmd.params if getattr(p, "help", None)}
    for name, sub in getattr(cmd, "commands", {}).items():
        found |= _helps(sub, f"{path} {name}")
    return found


def test_every_help_text_is_shown_as_written():
    """Defect 1 (the class): help is rendered as rich markup; each one must read as written."""
    written = _helps(typer.main.get_command(app))
    shown = {key: Text.from_markup(text).plain for key, text in _helps(command()).items()}
    words = {key: text.split() for key, text in written.items()}  # paragraphs are reflowed
    assert {key: text.split() for key, text in shown.items()} == words
    assert any("[[rule]]" in text for text in written.values())


# -- 2: bad counts refused before anything is stored --------------------------------


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["run", ENV, "-k", "-1"], "-k"),
        (["run", ENV, "-k", "0"], "-k"),
        (["run", ENV, "--limit", "0"], "--limit"),
        (["run", ENV, "--max-steps", "0"], "--max-steps"),
        (["env", "validate", ENV, "-k", "0"], "--repeats"),
        (["env", "validate", ENV, "--limit", "0"], "--limit"),
        (["env", "validate", ENV, "--concurrency", "0"], "--concurrency"),
        (["env", "import", "data.jsonl", "--limit", "0"], "--limit"),
        (["train", "rft", ENV, "-k", "0"], "-k"),
        (["train", "grpo", ENV, "--steps", "0"], "--steps"),
        (["train", "grpo", ENV, "--group-size", "1"], "--group-size"),
        (["redteam", "--concurrency", "0"], "--concurrency"),
    ],
)
def test_counts_below_one_are_refused_before_anything_is_stored(tmp_path, args, option):
    """Defect 2: `-k -1`, `-k 0` and `--limit 0` exited 0 and stored an empty run."""
    db = tmp_path / "runs.db"
    store_args = ["--db", f"sqlite:///{db}"] if args[0] in ("run", "train") else []
    line = only_error(gym_cli(*args, *store_args), 2)
    assert f"Invalid value for '{option}'" in line or f"'{option}'" in line
    assert not db.exists()


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--tasks", "nope-task", "no task 'nope-task' in boxgym/PyFunc-v0"),
        ("--split", "nosplit", "no environment declares the split 'nosplit'"),
        ("--executor", "k8s", "'k8s' is not one of local, ray"),
        ("--concurrency", "many", "--concurrency must be a positive number or auto"),
        ("--policy", "gpt", "'gpt' is not one of oracle, noop"),
    ],
)
def test_a_run_of_what_does_not_exist_is_one_line_with_exit_code_2(tmp_path, option, value, says):
    """Defect 2 (CLI part): the runner's refusals end as one line, exit code 2."""
    out = gym_cli(
        "run", ENV, "--policy", "noop", option, value, "--db", f"sqlite:///{tmp_path}/r.db"
    )
    assert says in error_line(out, 2)


def test_an_unreachable_engine_is_one_line_with_exit_code_1(tmp_path):
    """Defect 2 (CLI part): a run with the engine down fails in one line (a failure: 1)."""
    args = ["run", ENV, "--policy", "noop", "--limit", "1", "--db", f"sqlite:///{tmp_path}/r.db"]
    out = gym_cli(*args, env={"DOCKER_HOST": f"unix://{tmp_path}/no.sock"})
    line = error_line(out, 1)
    assert "no Docker engine answers" in line and "scripts/engine.sh" in line


# -- 6: ordinary OS errors ----------------------------------------------------------


def test_a_port_out_of_range_is_refused():
    """Defect 6: `gym view --port 99999` ended in a traceback (OverflowError)."""
    line = only_error(gym_cli("view", "--port", "99999"), 2)
    assert "Invalid value for '--port'" in line and "65535" in line


def test_a_port_in_use_is_one_line_naming_it(store):
    """Defect 6: a port another process holds is said in one line, with what to do."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        out = gym_cli("view", "abc00001", "--port", str(port), "--db", store)
    line = error_line(out, 2)
    assert f"127.0.0.1:{port}" in line and "in use" in line and "--port" in line


@pytest.mark.parametrize(
    "args",
    [
        ["export", "abc00001", "-o", "{blocked}/out.jsonl"],
        ["report", "abc00001", "--plot", "{blocked}/report.png"],
        ["view", "abc00001", "--html", "{blocked}/site"],
    ],
)
def test_an_unwritable_path_is_one_line_naming_it(tmp_path, store, args):
    """Defect 6: unwritable paths for export -o, report --plot and view --html."""
    blocked = tmp_path / "a-file"  # a file where a folder should be: refused even to root
    blocked.write_text("")
    out = gym_cli(*[a.format(blocked=blocked) for a in args], "--db", store)
    line = error_line(out, 1)
    assert str(blocked) in line
    assert line.endswith(("Not a directory", "File exists"))


# -- 10: terminal output, doctor, validate, help, --db ------------------------------


def test_runs_neutralizes_escapes_and_bidi_in_labels(store):
    """Defect 10: a label's clear-screen escape, RTL override and bell reached the terminal."""
    out = gym_cli("runs", "--db", store)
    assert out.returncode == 0, out.stderr
    assert "abc00002" in out.stdout
    assert not any(c in out.stdout for c in "\x1b\u202e\x07")
    assert "\\u202e" in out.stdout  # shown, not obeyed
    assert "[red]x[/]" in out.stdout  # and no markup read in it


def test_an_ambiguous_run_prefix_lists_the_candidates_literally(store):
    """Deliver 1 (and defects 1, 10): every candidate listed, its label neither markup nor
    escapes."""
    line = only_error(gym_cli("report", "abc", "--db", store), 2)
    assert "2 runs matching 'abc'" in line
    assert "abc00001 (one)" in line and "abc00002 (two \\u202e [red]x[/])" in line
    assert not any(c in line for c in "\x1b\u202e\x07")


def test_doctor_shows_the_engine_error_whole(tmp_path):
    """Defect 10: `gym doctor` cut the engine's error at its first colon."""
    import json

    out = gym_cli("doctor", "--json", env={"DOCKER_HOST": f"unix://{tmp_path}/no.sock"})
    assert out.returncode == 1
    engine = {c["name"]: c for c in json.loads(out.stdout)}["docker engine"]
    assert not engine["ok"]
    assert f"unix://{tmp_path}/no.sock: start it with" in engine["detail"]


def test_env_validate_with_the_engine_down_is_one_line(tmp_path):
    """Defect 10: `env validate` with the engine down printed a table of failed tasks."""
    out = gym_cli(
        "env", "validate", ENV, "--limit", "3", env={"DOCKER_HOST": f"unix://{tmp_path}/no.sock"}
    )
    assert "no Docker engine answers" in only_error(out, 1)
    assert out.stdout == ""


def test_every_option_of_every_command_has_help():
    """Defect 10: options without a description (--temperature, --seed...)."""

    def bare(cmd: Any, path: str) -> list[str]:
        missing = [f"{path} {p.name}" for p in cmd.params if not getattr(p, "help", None)]
        for name, sub in getattr(cmd, "commands", {}).items():
            missing += bare(sub, f"{path} {name}")
        return missing

    assert bare(command(), "gym") == []


def test_policy_help_lists_every_policy():
    """Defect 10: `--policy` help did not name the policies (now from their registry)."""
    run = command().commands["run"]  # type: ignore[attr-defined]
    policy = next(p for p in run.params if p.name == "policy")
    assert all(name in policy.help for name in [*POLICIES, "replay"])


def test_a_plain_path_for_db_gets_the_sqlite_hint(tmp_path):
    """Defect 10: `--db runs.db` got no hint that a store is named by a URL."""
    out = gym_cli("runs", "--db", "runs.db", cwd=tmp_path)
    assert "did you mean sqlite:///runs.db?" in only_error(out, 2)
    assert not (tmp_path / "runs.db").exists()


def test_an_empty_store_url_is_refused_not_read_as_the_default(tmp_path):
    """`--db "$DB"` with DB unset wrote into the default store (helper H)."""
    out = gym_cli("runs", "--db", "", cwd=tmp_path)
    assert "the store URL is empty" in only_error(out, 2)


# -- the error path itself ----------------------------------------------------------


def test_an_internal_error_is_one_line_and_debug_shows_the_traceback(monkeypatch, capsys):
    """Deliver 1: an unexpected exception is one line; `gym --debug` adds its traceback."""
    import gym._cli._doctor

    def broken(**_: Any) -> None:
        raise RuntimeError("boom [bold]x[/]")

    monkeypatch.setattr(gym._cli._doctor, "run_checks", broken)
    assert run_cli(["doctor"]) == 1
    said = capsys.readouterr().err
    assert said == (
        "error: internal error: RuntimeError: boom [bold]x[/] "
        "(rerun with --debug for the traceback)\n"
    )
    assert run_cli(["--debug", "doctor"]) == 1
    said = capsys.readouterr().err
    assert "Traceback" in said and "in broken" in said
    assert said.splitlines()[-1] == "error: internal error: RuntimeError: boom [bold]x[/]"


def test_ctrl_c_in_a_command_exits_130_without_a_traceback(monkeypatch, capsys):
    """Deliver 1: Ctrl-C stays a clean exit (130)."""
    import gym._cli._doctor

    def interrupted(**_: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(gym._cli._doctor, "run_checks", interrupted)
    assert run_cli(["doctor"]) == 130
    assert "Traceback" not in capsys.readouterr().err


def test_ctrl_c_while_the_package_loads_leaves_with_130_and_no_traceback(tmp_path):
    """A quick Ctrl-C after a wrong flag printed 25 lines of KeyboardInterrupt."""
    proc = subprocess.Popen(
        [GYM, "runs", "--db", f"sqlite:///{tmp_path / 'runs.db'}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # The Ctrl-C lands while the package loads (about a second on 2 cores): once the
    # process has mapped pydantic's compiled core, a third of the way in. A fixed sleep
    # could land before the interpreter had started (killed by the signal, nothing of
    # ours ran: CI, loaded) or after the command had finished.
    maps = f"/proc/{proc.pid}/maps"
    deadline = time.monotonic() + 60
    while "_pydantic_core" not in _read(maps) and proc.poll() is None:
        assert time.monotonic() < deadline, "the package never loaded pydantic's core"
        time.sleep(0.002)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:  # the process has left
        return ""
