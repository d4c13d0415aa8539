"""`gym view`: serve, write pages, list a run's episodes with filters, print one as text."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request

import viewdata

GYM = os.path.join(os.path.dirname(sys.executable), "gym")


def gym(stored: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GYM_DB_URL": stored}
    return subprocess.run([GYM, *args], capture_output=True, text=True, env=env, timeout=300)


def test_list_filters_a_runs_episodes_by_outcome_task_and_flag(stored):
    out = gym(stored, "view", viewdata.RUN_B[:6], "--list", "--outcome", "fail", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert sorted((r["task_id"], r["sample_index"]) for r in rows) == [
        ("gcd-of-list", 0),
        ("gcd-of-list", 1),
        ("is-prime", 1),
    ]
    out = gym(stored, "view", viewdata.RUN_B, "--list", "--task", "gcd", "--flag", "none", "--json")
    assert json.loads(out.stdout) == []
    out = gym(stored, "view", viewdata.RUN_B, "--list", "--flag", "tests_touched")
    assert out.returncode == 0 and out.stdout.count("tests_touched") == 3


def test_text_prints_an_episode_without_terminal_escapes(stored):
    target = f"{viewdata.RUN_B}/{viewdata.hostile_id()}"
    out = gym(stored, "view", target, "--text")
    assert out.returncode == 0, out.stderr
    assert "<script>alert(1)</script>" in out.stdout and "\x1b" not in out.stdout
    out = gym(stored, "view", viewdata.RUN_A, "--text", "--outcome", "fail")
    assert "task count-vowels" in out.stdout or "task caesar-shift" in out.stdout


def test_html_writes_the_pages_of_one_run(stored, tmp_path):
    out = gym(stored, "view", viewdata.RUN_A, "--html", str(tmp_path / "site"))
    assert out.returncode == 0, out.stderr
    index = (tmp_path / "site" / "index.html").read_text()
    assert viewdata.RUN_A[:12] in index and viewdata.RUN_B[:12] not in index
    assert len(list((tmp_path / "site").glob("episode-*.html"))) == 8


def test_serve_prints_a_loopback_url_that_answers(stored):
    env = {**os.environ, "GYM_DB_URL": stored}
    args = [GYM, "view", viewdata.RUN_B, "--outcome", "fail"]
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("?outcome=fail"), url
        with urllib.request.urlopen(url, timeout=120) as response:
            assert response.status == 200 and viewdata.RUN_B in response.read().decode()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130  # Ctrl-C, as README.md's table says
    finally:
        proc.kill()
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()


def test_bad_arguments_fail_in_one_line(stored):
    out = gym(stored, "view", viewdata.RUN_B, "--list", "--outcome", "won")
    assert out.returncode == 2 and "--outcome must be" in out.stderr
    out = gym(stored, "view", "--list")
    assert out.returncode == 2 and "need a RUN" in out.stderr


def test_list_task_filter_ignores_case(stored):
    """Issue 28, defect 10: ``--task GCD`` listed nothing."""
    out = gym(stored, "view", viewdata.RUN_B, "--list", "--task", "GCD", "--json")
    assert out.returncode == 0, out.stderr
    assert [(r["task_id"], r["sample_index"]) for r in json.loads(out.stdout)] == [
        ("gcd-of-list", 0),
        ("gcd-of-list", 1),
    ]


def test_list_unknown_flag_is_a_one_line_error_naming_the_flags_there_are(stored):
    """Issue 28, defect 10: ``--flag nope`` silently listed nothing."""
    out = gym(stored, "view", viewdata.RUN_B, "--list", "--flag", "nope")
    assert out.returncode == 2 and out.stdout == ""
    (line,) = out.stderr.strip().splitlines()
    assert line.endswith(
        "no flag named 'nope' in this run; flags here: tests_touched (or any, none)"
    )


def test_an_episode_prefix_is_looked_up_within_the_run(tmp_path, capsys):
    """`gym view RUN/0`: only the run's episodes count, not every run's in the store."""
    import time

    from gym._cli._app import run_cli
    from gym._store import EpisodeRow, RunRow, Store

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store = Store(url)
    now = time.time()
    for run_id, episode_ids in (("r1", ["0a", "1a"]), ("r2", ["0b", "0c"])):
        store.ensure_run(
            RunRow(
                id=run_id,
                created_at=now,
                updated_at=now,
                config={},
                policy="noop",
                boxgym_version="0",
            )  # fmt: skip
        )
        for eid in episode_ids:
            episode = EpisodeRow(
                id=eid, run_id=run_id, env_id="boxgym/PyFunc-v0", env_version=0,
                task_id=f"t-{eid}", split="train", sample_index=0, seed=0, policy="noop",
                outcome="pass",
            )  # fmt: skip
            store.commit_episode(episode, [], None)
    store.close()
    assert run_cli(["view", "r1/0", "--text", "--db", url]) == 0
    assert capsys.readouterr().out.startswith("episode 0a  run r1")
    assert run_cli(["view", "r1/0b", "--text", "--db", url]) == 2
    assert (
        capsys.readouterr().err
        == "error: run r1 has no episode '0b'; `gym view r1 --list` lists them\n"
    )
    assert run_cli(["view", "r2/0", "--text", "--db", url]) == 2
    assert "2 episodes of run r2 match '0': give more of the id" in capsys.readouterr().err
