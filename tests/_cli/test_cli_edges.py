"""Rough edges a new user met (issue ux41): each says what is wrong and what to do in one
line, or a note where a table would be empty, and every JSON written parses."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from gym._cli._app import command, run_cli
from gym._store import EpisodeRow, RunRow, Store

ROOT = Path(__file__).resolve().parents[2]
ENV = "boxgym/PyFunc-v0"


def said(capsys: pytest.CaptureFixture[str], args: list[str], code: int) -> tuple[str, str]:
    """The command's stdout and stderr, once it exited with ``code``."""
    assert run_cli(args) == code, capsys.readouterr()
    out = capsys.readouterr()
    return out.out, out.err


def run_row(run_id: str = "r1") -> RunRow:
    now = time.time()
    return RunRow(
        id=run_id,
        created_at=now,
        updated_at=now,
        config={"envs": [ENV]},
        policy="noop",
        boxgym_version="0",
    )


def episode(eid: str, outcome: str, task: str = "alnum-palindrome") -> EpisodeRow:
    return EpisodeRow(
        id=eid,
        run_id="r1",
        env_id=ENV,
        env_version=0,
        task_id=task,
        split="train",
        sample_index=0,
        seed=0,
        policy="noop",
        outcome=outcome,
    )


def one_episode(tmp_path: Path, outcome: str) -> str:
    """The URL of a store whose run r1 holds one episode ``e1`` of that outcome."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store = Store(url)
    store.ensure_run(run_row())
    store.commit_episode(episode("e1", outcome), [], None)
    store.close()
    return url


@pytest.fixture
def infra_only(tmp_path: Path) -> str:
    """A store whose one run has only an infra error: nothing graded, every rate NaN."""
    return one_episode(tmp_path, "infra_error")


# -- 1, 2: a --db that is no store, or a database we do not support --------------------


@pytest.mark.parametrize("args", [["report"], ["runs"], ["view", "r1", "--list"]])
def test_a_file_that_is_no_store_is_one_line_saying_what_to_pass(tmp_path, capsys, args):
    path = tmp_path / "notdb.db"
    path.write_bytes(bytes(range(256)) * 64)
    url = f"sqlite:///{path}"
    out, err = said(capsys, [*args, "--db", url], 2)
    assert err == (
        f"error: {url} is not a boxgym run store (file is not a database); "
        "pass --db a store made by gym run, or a new path\n"
    )


def test_db_of_another_database_names_the_ones_supported(capsys):
    _, err = said(capsys, ["runs", "--db", "mysql://x"], 2)
    assert "only sqlite:/// and postgresql:// URLs are supported, not mysql://" in err
    assert "MySQLdb" not in err


# -- 3: numbers that are not finite ------------------------------------------------------


def test_report_json_of_a_run_with_nothing_graded_is_json_with_null(capsys, infra_only):
    out, _ = said(capsys, ["report", "r1", "--json", "--db", infra_only], 0)

    def refuse(name: str) -> object:
        raise AssertionError(f"not JSON: {name}")

    report = json.loads(out, parse_constant=refuse)
    assert report["overall"]["pass_at_1"] | {"interval": None} == {
        "value": None,
        "lo": None,
        "hi": None,
        "interval": None,
    }


def test_report_table_shows_a_dash_where_there_is_no_number(capsys, monkeypatch, infra_only):
    monkeypatch.setenv("COLUMNS", "200")
    out, _ = said(capsys, ["report", "r1", "--db", infra_only], 0)
    assert "nan" not in out.lower()
    row = next(line for line in out.splitlines() if "│ all" in line)
    assert [cell.strip() for cell in row.split("│")][3:5] == ["0/0/1", "-"]


def test_a_report_of_infra_errors_says_why_and_how_to_grade_them_again(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store = Store(url)
    store.ensure_run(run_row())
    why = "grading failed: the engine\x1b[31m did not answer\nTraceback (most recent call last):"
    for eid in ("e1", "e2"):
        store.commit_episode(
            episode(eid, "infra_error").model_copy(update={"end_reason": why}), [], None
        )
    store.commit_episode(episode("e3", "pass"), [], None)
    store.close()
    _, err = said(capsys, ["report", "r1", "--db", url], 0)
    lines = err.splitlines()
    assert lines[0].startswith("2 episodes ended infra_error (")
    assert lines[1] == "  2 x grading failed: the engine did not answer"  # one line, no escape
    assert "--retry-infra" in lines[2]


@pytest.mark.parametrize(
    ("args", "said_"),
    [
        (["view", "--html", "out", "--list"], "--list does not apply"),
        (["view", "--html", "out", "--port", "5", "--flag", "any"], "--port, --flag do not apply"),
        (
            ["run", "boxgym/PyFunc-v0", "--policy", "replay", "--replay", "r1", "--model", "m"],
            "--model does not apply to --policy replay",
        ),
        (
            ["run", "boxgym/PyFunc-v0", "--policy", "noop", "--address", "h:1"],
            "--address names a Ray cluster: add --executor ray",
        ),
        (
            ["env", "validate", "boxgym/PyFunc-v0", "--limit", "1", "--shard", "2/2"],
            "nothing to validate",
        ),
        (
            ["run", "boxgym/PyFunc-v0", "--policy", "oracle", "--unconstrained"],
            "--constrained/--unconstrained does not apply to --policy oracle",
        ),
        (["run", "boxgym/PyFunc-v0", "--policy", "openai"], "--policy openai needs --model"),
        (
            ["train", "grpo", "boxgym/Learn-v0", "--policy", "tiny", "--model", "nope"],
            "--policy tiny trains --model tiny or a checkpoint folder",
        ),
    ],
)
def test_options_that_would_do_nothing_are_refused_before_anything_is_stored(
    tmp_path, capsys, args, said_
):
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    _, err = said(capsys, [*args, "--db", url], 2)
    assert said_ in err and not (tmp_path / "runs.db").exists() and not (tmp_path / "out").exists()


# -- 4: the docs the help texts name ---------------------------------------------------


def _help_texts(cmd: object) -> list[str]:
    texts = []
    for item in (cmd, *getattr(cmd, "params", [])):
        texts += [getattr(item, a, None) or "" for a in ("help", "short_help", "epilog")]
    for sub in getattr(cmd, "commands", {}).values():
        texts += _help_texts(sub)
    return texts


def _anchors(markdown: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings (``## Policies``: ``policies``)."""
    heads = re.findall(r"^#+ (.+)$", markdown.read_text(), flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") for h in heads}


def test_every_doc_a_help_text_names_exists():
    named = {
        m.group(0)
        for t in _help_texts(command())
        for m in re.finditer(r"(docs/[\w./-]*\w|README\.md)(#[\w-]+)?", t)
    }
    assert "README.md#policies" in named  # `gym run --policy`: the section on policies
    for ref in named:
        path, _, anchor = ref.partition("#")
        assert (ROOT / path).exists(), f"a help text names {ref}, which does not exist"
        assert not anchor or anchor in _anchors(ROOT / path), f"{path} has no section {anchor}"


# -- 6: a value a training config refuses, by its option -------------------------------


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["grpo", ENV, "--temperature", "0"], "--temperature must be greater than 0"),
        (["grpo", ENV, "--lr", "0", "--temperature", "0"], "--lr must be greater than 0; --te"),
        (["grpo", ENV, "--max-gap", "0"], "--max-gap must be greater than 0"),
        (["grpo", ENV, "--aggregation", "sum"], "--aggregation must be 'token_mean', "),
        (["rft", ENV, "--temperature", "0"], "--temperature must be greater than 0"),
    ],
)
def test_a_refused_training_value_is_named_by_its_option(tmp_path, capsys, args, line):
    db = tmp_path / "runs.db"
    _, err = said(capsys, ["train", *args, "--db", f"sqlite:///{db}"], 2)
    assert err.startswith(f"error: {line}") and err.count("\n") == 1, err
    assert "Config" not in err and not db.exists()


# -- 7: a note instead of an empty table -----------------------------------------------


def test_runs_of_an_empty_store_says_how_to_make_one(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    Store(url).close()
    out, err = said(capsys, ["runs", "--db", url], 0)
    assert out == "" and err == f"no runs in {url} yet: gym run ENV --policy ... makes one\n"
    out, _ = said(capsys, ["runs", "--db", url, "--json"], 0)
    assert json.loads(out) == []


def test_a_listing_no_episode_passes_says_what_matched_nothing(tmp_path, capsys):
    url = one_episode(tmp_path, "fail")
    out, err = said(capsys, ["view", "r1", "--list", "--task", "zzz", "--db", url], 0)
    assert out == "" and err == "no episode of task 'zzz' in run r1\n"
    args = ["view", "r1", "--list", "--task", "alnum", "--outcome", "pass", "--db", url]
    out, err = said(capsys, args, 0)
    assert err == "no episode of task 'alnum' with outcome pass in run r1\n"
    out, _ = said(capsys, ["view", "r1", "--list", "--task", "alnum", "--db", url], 0)
    assert "alnum-palindrome" in out


def test_fields_are_matched_to_options_arguments_or_keep_their_name():
    """``server.lora.rank``: ``--lora-rank``; ``envs``: the argument; no option: the field."""
    import typer
    from pydantic import BaseModel, Field

    from gym._cli._app import from_options
    from gym.errors import ConfigError

    class Lora(BaseModel):
        rank: int = Field(ge=1)
        alpha: int = Field(ge=1)

    class Server(BaseModel):
        lora: Lora

    class Settings(BaseModel):
        envs: list[str] = Field(min_length=1)
        server: Server

    grpo = command().commands["train"].commands["grpo"]  # type: ignore[attr-defined]
    bad = {"envs": [], "server": {"lora": {"rank": 0, "alpha": 0}}}
    with pytest.raises(ConfigError) as info:
        from_options(typer.Context(grpo), lambda: Settings.model_validate(bad))
    assert str(info.value) == (
        "ENVS: List should have at least 1 item after validation, not 0; "
        "--lora-rank must be greater than or equal to 1; "
        "server.lora.alpha must be greater than or equal to 1"
    )


def test_env_new_names_every_template_word_and_where_it_writes():
    """The help of `gym env new` lists the template words the registry holds, and says
    the scaffold goes under the checkout unless GYM_ROOT says otherwise."""
    from typer.testing import CliRunner

    from gym._cli import app
    from gym._envs._registry import templates

    shown = CliRunner().invoke(app, ["env", "new", "--help"], env={"COLUMNS": "200"}).output
    assert all(word in shown for word in templates()), shown
    assert "GYM_ROOT" in shown


def test_export_of_a_split_no_environment_declares_exits_2_like_run(tmp_path, capsys):
    """`gym export --split nope` is refused as `gym run --split nope` is, writing nothing."""
    url = one_episode(tmp_path, "pass")
    out_file = tmp_path / "ex.jsonl"
    args = ["export", "r1", "--split", "nope", "--out", str(out_file), "--db", url]
    _, err = said(capsys, args, 2)
    assert err.startswith("error: no environment declares the split 'nope' (declared: ")
    assert not out_file.exists()
    _, err = said(capsys, [*args[:3], "train", *args[4:]], 0)
    assert "wrote 1 episodes" in err


def test_task_ids_after_one_tasks_option_are_not_taken_for_environments(tmp_path, capsys):
    """`--tasks a b` read b as an env: its error says so; `--tasks a,b` is two ids."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    args = ["run", ENV, "--policy", "oracle", "--db", url, "--json", "--tasks"]
    _, err = said(capsys, [*args, "alnum-palindrome", "gcd-of-list"], 2)
    assert err.startswith("error: no environment 'gcd-of-list'")
    assert "repeat --tasks for each task id, or separate them with commas" in err
    out, _ = said(capsys, [*args, "alnum-palindrome,gcd-of-list"], 0)
    assert json.loads(out)["envs"][ENV]["episodes"] == 2


def test_replay_given_to_another_policy_is_refused_not_ignored(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    args = ["run", ENV, "--policy", "oracle", "--replay", "r1", "--limit", "1", "--db", url]
    _, err = said(capsys, args, 2)
    assert err == "error: --replay is read by --policy replay only (this run's is oracle)\n"
    assert not (tmp_path / "runs.db").exists()


def test_pages_are_never_written_over_a_folder_of_someone_elses(tmp_path, capsys):
    url = one_episode(tmp_path, "pass")
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("mine")
    _, err = said(capsys, ["view", "r1", "--html", str(site), "--db", url], 2)
    assert "holds files that gym view did not write" in err
    assert (site / "index.html").read_text() == "mine"
    pages = tmp_path / "pages"
    for _ in range(2):  # a folder written before is written again
        _, err = said(capsys, ["view", "r1", "--html", str(pages), "--db", url], 0)
        assert err.startswith("wrote ")
    assert "mine" not in (pages / "index.html").read_text()
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("mine")
    (pages / ".boxgym-viewer").unlink()
    (pages / ".boxgym-viewer").symlink_to(elsewhere)  # a mark is a file, never written through
    _, err = said(capsys, ["view", "r1", "--html", str(pages), "--db", url], 2)
    assert "is not a file gym view wrote" in err and elsewhere.read_text() == "mine"


def test_help_paragraphs_wrap_at_the_terminal_not_at_the_docstring(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    out, _ = said(capsys, ["run", "--help"], 0)
    assert "every finished episode is committed, containers are removed" in out


def test_a_long_line_on_stderr_stays_one_line_in_a_pipe(capsys, monkeypatch):
    """rich wraps at 80 columns where the output is no terminal; a log wants the line whole."""
    from gym._cli._app import err

    monkeypatch.delenv("COLUMNS", raising=False)
    err.print("invalid " + "word " * 40)
    assert capsys.readouterr().err == "invalid " + "word " * 40 + "\n"
