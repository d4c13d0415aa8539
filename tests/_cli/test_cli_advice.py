"""Rough edges a demanding new user met (issue cli58): each command says what it did, what
it picked and how to go on, and writes nothing halfway."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from store_rows import episode

from gym._cli._app import run_cli
from gym._cli._runs import run_command
from gym._store import RunRow, Store

GYM = os.path.join(os.path.dirname(sys.executable), "gym")


def gym_cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The real `gym` in a child process (help texts are made as it starts)."""
    return subprocess.run(
        [GYM, *args], capture_output=True, text=True, env={**os.environ, **env}, timeout=120
    )


def said(capsys: pytest.CaptureFixture[str], args: list[str], code: int) -> tuple[str, str]:
    """The command's stdout and stderr, once it exited with ``code``."""
    assert run_cli(args) == code, capsys.readouterr()
    out = capsys.readouterr()
    return out.out, out.err


def run_row(run_id: str = "r1", ago: float = 0.0, **config: object) -> RunRow:
    now = time.time() - ago
    return RunRow(
        id=run_id,
        created_at=now,
        updated_at=now,
        config={"envs": ["boxgym/PyFunc-v0"], "policy": "noop", **config},
        policy="noop",
        boxgym_version="0",
    )


def one_episode(tmp_path: Path, run_id: str = "r1") -> str:
    """The URL of a store whose run ``run_id`` holds one passed episode."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store = Store(url)
    store.ensure_run(run_row(run_id))
    row = episode(
        f"{run_id}-e1", "pass", run_id, env_id="boxgym/PyFunc-v0", task_id="alnum-palindrome"
    )
    store.commit_episode(row, [], None)
    store.close()
    return url


def test_db_help_names_the_store_used_without_it_here(tmp_path: Path):
    environ = {k: v for k, v in os.environ.items() if k != "GYM_DB_URL"}
    shown = subprocess.run(
        [GYM, "report", "--help"],
        capture_output=True,
        text=True,
        env={**environ, "GYM_DATA": str(tmp_path), "COLUMNS": "400"},
        timeout=120,
    )
    assert f"(default: sqlite:///{tmp_path}/runs.db)" in shown.stdout, shown.stdout
    told = gym_cli("report", "--help", GYM_DB_URL="sqlite:///x.db", COLUMNS="400")
    assert "(default: the GYM_DB_URL set here)" in told.stdout, told.stdout


# -- gym export: never over a file without --force, and through a file of its own ---------


def test_export_refuses_to_replace_a_file_without_force(tmp_path: Path, capsys):
    url = one_episode(tmp_path)
    out = tmp_path / "ex.jsonl"
    out.write_text("mine\n")
    _, err = said(capsys, ["export", "r1", "--out", str(out), "--db", url], 2)
    assert err == f"error: {out} exists: pass --force to replace it\n"
    assert out.read_text() == "mine\n"
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "data.jsonl").write_text("mine\n")
    args = ["export", "r1", "--format", "hf", "--out", str(tmp_path / "ds"), "--db", url]
    _, err = said(capsys, args, 2)
    assert err == f"error: {tmp_path / 'ds' / 'data.jsonl'} exists: pass --force to replace it\n"
    _, err = said(capsys, ["export", "r1", "--out", str(out), "--db", url, "--force"], 0)
    assert "wrote 1 episodes" in err and out.read_text().startswith("{")


def test_export_writes_through_a_file_no_one_else_names(tmp_path: Path, capsys):
    """It wrote ``ex.tmp`` beside ``ex.jsonl`` first, replacing a file of that name."""
    url = one_episode(tmp_path)
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "ex.tmp").write_text("mine\n")
    said(capsys, ["export", "r1", "--out", str(folder / "ex.jsonl"), "--db", url], 0)
    assert (folder / "ex.tmp").read_text() == "mine\n"
    assert sorted(p.name for p in folder.iterdir()) == ["ex.jsonl", "ex.tmp"]


def test_export_force_over_a_symlink_writes_through_to_its_file(tmp_path: Path, capsys):
    """Review cli-p2, item 5: ``--force --out LINK`` replaced the link with a regular file;
    now the file it points to is replaced (as ``cp`` does), whole, and the link stays."""
    url = one_episode(tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    (data / "ex.jsonl").write_text("old\n")
    link = tmp_path / "latest.jsonl"
    link.symlink_to(Path("data") / "ex.jsonl")  # relative, as `ln -s` makes them
    _, err = said(capsys, ["export", "r1", "--out", str(link), "--db", url, "--force"], 0)
    assert "wrote 1 episodes" in err
    assert link.is_symlink() and os.readlink(link) == str(Path("data") / "ex.jsonl")
    assert (data / "ex.jsonl").read_text().startswith("{")
    assert sorted(p.name for p in data.iterdir()) == ["ex.jsonl"]  # no temporary file left
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("runs.db")) == [
        "data",
        "latest.jsonl",
    ]
    dangling = tmp_path / "next.jsonl"
    dangling.symlink_to(data / "new.jsonl")
    said(capsys, ["export", "r1", "--out", str(dangling), "--db", url, "--force"], 0)
    assert dangling.is_symlink() and (data / "new.jsonl").read_text().startswith("{")


# -- gym doctor: each fix once ------------------------------------------------------------


def test_doctor_says_each_fix_once(tmp_path: Path):
    """With the engine down it said `scripts/engine.sh` three times: in the engine's error,
    as the check's fix and as the first fix."""
    out = gym_cli("doctor", DOCKER_HOST=f"unix://{tmp_path}/no.sock", COLUMNS="200")
    assert out.returncode == 1
    shown = out.stdout + out.stderr
    assert shown.count("scripts/engine.sh") == 1, shown
    assert f"no Docker engine answers at unix://{tmp_path}/no.sock" in out.stdout
    assert out.stderr.startswith("1 problem(s); fix: start it with `sudo scripts/engine.sh`")


def test_doctor_joins_the_fixes_of_its_failed_checks_once_each():
    from gym._cli._doctor import Check, fixes, without_fix

    checks = [
        Check(name="a", ok=False, detail="down: run x", fix="run x"),
        Check(name="b", ok=True, detail="fine"),
        Check(name="c", ok=False, detail="missing", fix="run y"),
        Check(name="d", ok=False, detail="also missing", fix="run x"),
    ]
    assert fixes(checks) == ["run x", "run y"]
    assert [without_fix(c) for c in checks] == ["down", "fine", "missing", "also missing"]


# -- gym report with no RUN: the newest run of `gym run`, not of a training -----------------


def test_report_of_no_run_is_of_the_newest_gym_run_not_of_a_training(tmp_path: Path, capsys):
    url = one_episode(tmp_path, "bench")
    store = Store(url)
    trained = {"policy_params": {"policy_version": "rft r 3"}}
    store.ensure_run(run_row("collect", ago=-60, **trained))  # made after the benchmark
    store.close()
    out, err = said(capsys, ["report", "--db", url], 0)
    assert err.startswith(
        "run bench (the newest `gym run` of 2; 1 newer made by training; `gym runs` lists them)"
    )
    assert "run bench" in out
    alone = f"sqlite:///{tmp_path / 'alone.db'}"
    store = Store(alone)
    store.ensure_run(run_row("collect", **trained))
    store.close()
    _, err = said(capsys, ["report", "--db", alone], 0)
    assert err.startswith("run collect (made by training: no run of 1 was made by `gym run`;")


# -- the command that finishes a run -------------------------------------------------------


def made_by(monkeypatch: pytest.MonkeyPatch, args: list[str]) -> str:
    """The id of the run the `gym run` command line makes (nothing runs)."""
    import gym._run._runner as runner

    made: list[str] = []

    def planned(config: runner.RunConfig, **_: object) -> None:
        made.append(config.run_id)
        raise OSError("planned: nothing runs")

    monkeypatch.setattr(runner, "run", planned)
    assert run_cli(args) == 1
    return made[0]


@pytest.mark.parametrize(
    "settings",
    [
        {"policy": "noop"},
        {
            "policy": "openai",
            "policy_params": {
                "model": "qwen 7b",
                "base_url": "http://127.0.0.1:9/v1",
                "temperature": 0.7,
                "constrained": False,
            },
            "k": 3,
            "seed": 7,
            "split": "train",
            "limit": 2,
            "tasks": ["alnum-palindrome", "caesar-shift"],
            "max_steps": 5,
        },
        {
            "policy": "noop",
            "user": "openai",
            "user_params": {"model": "m", "base_url": "http://127.0.0.1:9/v1", "seed": 3},
        },
    ],
)
def test_the_finishing_command_makes_the_same_run(tmp_path, monkeypatch, settings):
    from shlex import split

    from gym._run._runner import RunConfig

    config = RunConfig(envs=["boxgym/PyFunc-v0"], label="my run", **settings)
    row = RunRow(
        id=config.run_id,
        created_at=0.0,
        updated_at=0.0,
        config=config.model_dump(mode="json"),
        policy=config.policy,
        boxgym_version="0",
        label="my run",
    )
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    command = run_command(row, url)
    assert command is not None and command.startswith("gym run boxgym/PyFunc-v0 --policy ")
    assert "--label 'my run'" in command and command.endswith(f"--db {url}")
    assert made_by(monkeypatch, split(command)[1:]) == config.run_id
    trained = row.model_copy(
        update={"config": {**row.config, "policy_params": {"policy_version": "3"}}}
    )
    assert run_command(trained, url) is None
    other = row.model_copy(update={"config": {**row.config, "weights": "step-3"}})
    assert run_command(other, url) is None  # a setting no flag of `gym run` gives


def test_the_finishing_command_of_a_label_with_control_characters(tmp_path, monkeypatch, capsys):
    """Review cli-p2, item 4: the label went into the command, which the terminal showed as
    ``--label 'bad\\x01label red'``: pasted, that set another label. A label that `clean`
    changes is left out (the run keeps it; no id depends on it); the table shows it cleaned."""
    from shlex import split

    from gym._core._text import clean
    from gym._run._runner import RunConfig

    label = "bad\x01label \x1b[31mred"
    config = RunConfig(envs=["boxgym/PyFunc-v0"], policy="noop", k=2, label=label)
    row = RunRow(
        id=config.run_id,
        created_at=0.0,
        updated_at=0.0,
        config=config.model_dump(mode="json"),
        policy="noop",
        boxgym_version="0",
        label=label,
    )
    command = run_command(row, None)
    assert command == "gym run boxgym/PyFunc-v0 --policy noop -k 2" and clean(command) == command
    assert made_by(monkeypatch, split(command)[1:]) == config.run_id
    monkeypatch.undo()
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store = Store(url)
    store.start_run(row, planned=4)
    store.end_run(row.id, "stopped", "Ctrl-C")
    store.close()
    out, err = said(capsys, ["runs", "--db", url], 0)
    assert "bad\\x01label red" in out and "\x01" not in out + err and "\x1b" not in out + err


def test_a_run_that_fails_part_way_says_how_to_finish_it(tmp_path, capsys):
    from gym._cli._runs import _finish_note

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store = Store(url)
    with pytest.raises(OSError), _finish_note(store, "r1", url):  # refused: nothing stored
        raise OSError("refused")
    assert capsys.readouterr().err == ""
    store.start_run(run_row("r1", k=2), planned=4)
    with pytest.raises(OSError), _finish_note(store, "r1", url):  # held now: another process
        raise OSError("taken")
    assert capsys.readouterr().err == ""
    store.end_run("r1", "failed", "the engine went away")
    with pytest.raises(OSError), _finish_note(store, "r1", url):
        raise OSError("the engine went away")
    finish = f"gym run boxgym/PyFunc-v0 --policy noop -k 2 --db {url}"
    assert capsys.readouterr().err == f"the run keeps what it committed; to finish it: {finish}\n"


def test_the_finishing_command_names_the_store_as_typed_and_reads_it(tmp_path, capsys):
    """Review cli-p2, item 2: `--db` printed percent-encoded (``$`` as ``%24``)."""
    from shlex import split

    folder = tmp_path / "my runs $HOME 100%"
    folder.mkdir()
    url = f"sqlite:///{folder}/runs.db".replace("%", "%25")  # as SQLAlchemy reads a %
    store = Store(url)
    store.start_run(run_row("r1", k=2), planned=4)
    store.end_run("r1", "stopped", "Ctrl-C")
    store.close()
    assert (folder / "runs.db").exists()
    _, err = said(capsys, ["report", "r1", "--db", url], 0)
    finish = err.split("to finish it: ", 1)[1].strip()
    args = split(finish)
    assert args[-2:] == ["--db", url] and "%24" not in finish
    out, _ = said(capsys, ["runs", "--db", args[-1], "--json"], 0)  # the same store
    assert '"id": "r1"' in out


def test_the_finishing_command_never_prints_the_password_and_says_where_it_comes_from():
    """Review cli-p2, item 2: a PostgreSQL password printed as ``***``: that command failed."""
    from gym._cli._runs import finish_note

    url = "postgresql://me:s3cr%40t@db.example:5432/gym"
    command = run_command(run_row("r1", k=2), url)
    assert command is not None and command.endswith("--db postgresql://me@db.example:5432/gym")
    note = finish_note(command, url)
    assert "s3cr" not in note and "***" not in note and "PGPASSWORD" in note
    plain = "postgresql://me@db.example/gym"
    assert finish_note(str(run_command(run_row("r1"), plain)), plain).endswith("--db " + plain)


def test_the_viewer_line_after_a_run_pastes_as_one_command(tmp_path):
    """Review cli-p2, item 3: ``open it in the viewer: gym view ID --db sqlite:////a b/$X``
    was not quoted: pasted, the shell split the path and expanded ``$X``."""
    from shlex import split

    from toy_cli import TOY_GYM

    folder = tmp_path / "my runs $X"
    folder.mkdir()
    url = f"sqlite:///{folder}/runs.db"
    tests = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), str(tests.parent)])}
    args = ["run", "toy/Answer-v0", "--policy", "slow-oracle", "--db", url]
    done = subprocess.run(
        [sys.executable, "-c", TOY_GYM, *args],
        capture_output=True,
        text=True,
        env={**env, "TOY_SLOW_S": "0", "GYM_PROGRESS": "off"},
        cwd=tests,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("open it in the viewer: ")]
    view = split(line.removeprefix("open it in the viewer: "))
    assert view[:2] == ["gym", "view"] and view[3:] == ["--db", url]
    assert view[2] in Store(url, read_only=True).run_statuses()


# -- gym view --html: every page made before the folder changes ----------------------------


def test_pages_that_fail_to_render_leave_the_folder_as_it_was(tmp_path, capsys, monkeypatch):
    import gym._view._site as site
    from gym.errors import GymError

    url = one_episode(tmp_path)
    pages = tmp_path / "pages"
    _, err = said(capsys, ["view", "r1", "--html", str(pages), "--db", url], 0)
    assert "replace" not in err
    before = {p.relative_to(pages): p.read_bytes() for p in pages.rglob("*") if p.is_file()}
    (pages / "index.html").write_bytes(b"of the last write")
    before[Path("index.html")] = b"of the last write"

    def broken(*_: object) -> None:
        raise GymError("the episode's page failed")

    monkeypatch.setattr(site, "episode_view", broken)
    for folder in (pages, tmp_path / "new"):
        _, err = said(capsys, ["view", "r1", "--html", str(folder), "--db", url], 1)
        assert err == "error: the episode's page failed\n"
    assert not (tmp_path / "new").exists()
    after = {p.relative_to(pages): p.read_bytes() for p in pages.rglob("*") if p.is_file()}
    assert after == before
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith("runs.db")] == ["pages"]
    monkeypatch.undo()
    (pages / "mine.txt").write_bytes(b"a file of the user's")  # not gym view's: it stays
    (pages / ".git").mkdir()
    _, err = said(capsys, ["view", "r1", "--html", str(pages), "--db", url], 0)
    assert "(each replaces the page of its name written there before; other files stay)" in err
    assert (pages / "index.html").read_bytes() != b"of the last write"
    assert (pages / "mine.txt").read_bytes() == b"a file of the user's"
    assert (pages / ".git").is_dir()
    assert not [p for p in pages.iterdir() if p.name.endswith(".new")]  # the staging


def test_a_replayed_stores_password_is_never_a_stored_parameter(monkeypatch):
    """The replay policy's parameters are stored with the run and each episode (the viewer
    shows them, exports carry them): its store's password goes to PGPASSWORD instead."""
    from gym._cli._runs import _policy_params

    monkeypatch.delenv("PGPASSWORD", raising=False)
    url = "postgresql://me:s3cr%40t@db.example:5432/gym"
    params = _policy_params("replay", None, None, None, "r1", url)
    assert params == {"source": "r1", "db": "postgresql://me@db.example:5432/gym"}
    assert os.environ["PGPASSWORD"] == "s3cr@t"
    plain = "sqlite:////tmp/x y/runs.db"
    assert _policy_params("replay", None, None, None, "r1", plain)["db"] == plain
