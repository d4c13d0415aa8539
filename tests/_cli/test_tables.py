"""Every table the CLI prints fits 80 columns, wraps its text and never cuts a number.

Reproduction 7 of issue 28: `gym report` at 80 columns printed ``[0.00-...``. Each test
renders a table of real data (a store written through the real Store; the registry; the
validation and red-team rows as their commands build them) at ``COLUMNS=80`` and checks
that no line is wider than 80 and that every number appears whole on one line.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.table import Table

from gym._cli._tables import fit, number, print_table, text, words
from gym._store import EpisodeRow, RunRow, StepRow, Store, VerdictRow

GYM = os.path.join(os.path.dirname(sys.executable), "gym")
RUN_A, RUN_B = "c1a55e5b0a5e1100", "c1a55e5c0ffee200"
LABEL = "qwen2.5-coder-7b-instruct temperature 0.7 with the long system prompt"
ENVS = {
    "boxgym/PyFunc-v0": ["is-prime", "count-vowels", "gcd-of-list", "caesar-shift"],
    "boxgym/SQL-v0": ["monthly-revenue-by-customer-segment", "dedupe-orders"],
}
FLAGS = ["tests_touched", "network_attempt", "claimed_success_without_passing"]


def _run(run_id: str, created: float) -> RunRow:
    config = {"envs": list(ENVS), "policy": "openai", "policy_params": {}, "k": 3}
    return RunRow(
        id=run_id,
        created_at=created,
        updated_at=created,
        config=config,
        policy="openai",
        boxgym_version="0.1.0",
        label=LABEL,
    )


def _episode(run_id: str, env: str, task: str, sample: int, passed: bool) -> tuple[Any, ...]:
    eid = f"{run_id[-4:]}-{env[7:10]}-{task}-{sample}"
    outcome = "pass" if passed else "fail"
    episode = EpisodeRow(
        id=eid,
        run_id=run_id,
        env_id=env,
        env_version=0,
        task_id=task,
        split="train" if sample else "eval",
        tags={"difficulty": "hard" if len(task) > 12 else "easy"},
        sample_index=sample,
        seed=sample,
        policy="openai",
        outcome=outcome,
        reward=1.0 if passed else 0.0,
        end_reason="submit" if passed else "truncated: the step budget of 20 steps ran out",
        n_steps=3,
        prompt_tokens=912_345,
        completion_tokens=123_456,
    )
    steps = [StepRow(episode_id=eid, index=i, tool="bash") for i in range(3)]
    flags = [] if passed else [{"name": f, "gating": True} for f in FLAGS[: 1 + sample % 3]]
    verdict = VerdictRow(
        episode_id=eid, created_at=time.time(), outcome=outcome, reward=episode.reward, flags=flags
    )
    return episode, steps, verdict


def fill(store: Store) -> None:
    """Two runs of 3 samples per task on two environments; B is better on half the tasks."""
    now = time.time()
    for n, run_id in enumerate((RUN_A, RUN_B)):
        store.ensure_run(_run(run_id, now - 3600 + n))
        for env, tasks in ENVS.items():
            for t, task in enumerate(tasks):
                for sample in range(3):
                    passed = (t + sample) % 3 != 0 if n == 0 else t % 2 == 0 or sample == 0
                    store.commit_episode(*_episode(run_id, env, task, sample, passed))


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url = f"sqlite:///{tmp_path_factory.mktemp('tables') / 'runs.db'}"
    store = Store(url)
    fill(store)
    store.close()
    yield url


def gym(*args: str, db: str | None = None, columns: int = 80) -> str:
    """Run the CLI at 80 columns (or ``columns``), its output not a terminal; its stdout."""
    env = {**os.environ, "COLUMNS": str(columns), **({"GYM_DB_URL": db} if db else {})}
    out = subprocess.run([GYM, *args], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def narrow(output: str, columns: int = 80) -> str:
    """The output, after checking that no line is wider than 80 columns (or ``columns``)."""
    wide = [line for line in output.splitlines() if len(line) > columns]
    assert not wide, "\n".join(wide)
    return output


def column(shown: str, index: int) -> list[str]:
    """A table's column: each cell's lines joined (a folded word whole again).

    A row starts where the first column has text (so that column must not wrap).
    """
    cells: list[str] = []
    for line in shown.splitlines():
        if line.startswith("│"):
            parts = [p.strip() for p in line.split("│")[1:-1]]
            if parts[0] or not cells:
                cells.append("")
            cells[-1] += parts[index]
    return cells


def interval(m: dict[str, float]) -> str:
    return f"[{m['lo']:.2f}, {m['hi']:.2f}]"


def test_report_at_80_columns_shows_every_interval_whole(stored):
    """Issue 28, reproduction 7: `gym report` at 80 columns cut ``[0.00-...``."""
    report = json.loads(gym("report", RUN_B, "--json", db=stored))
    shown = narrow(gym("report", RUN_B, db=stored))
    groups = [*report["envs"], report["overall"], *report["slices"]]
    assert len(groups) == 7
    for g in groups:
        assert interval(g["pass_at_1"]) in shown, g["name"]
        assert f"{g['pass_at_1']['value']:.2f}" in shown
        assert f"{g['passed']}/{g['failed']}/{g['infra_error']}" in shown
    for g in [*report["envs"], report["overall"]]:
        ks = [("@", k, m) for k, m in g["pass_at_k"].items()]
        ks += [("^", k, m) for k, m in g["pass_hat_k"].items() if k != "1"]
        assert len(ks) == 4
        for mark, k, m in ks:
            assert f"{mark}{k}={m['value']:.2f}" in shown, (g["name"], mark, k)
    assert "18.6M" in shown  # 18,644,418 tokens in all: short at 80 columns
    assert "left out at 80 columns: valid calls" in shown


def test_report_at_140_columns_keeps_one_line_per_group(stored):
    env = {**os.environ, "COLUMNS": "140", "GYM_DB_URL": stored}
    out = subprocess.run([GYM, "report", RUN_B], capture_output=True, text=True, env=env)
    rows = [line for line in out.stdout.splitlines() if "PyFunc-v0" in line]
    assert len(rows) == 1 and re.search(r"0\.\d\d \[0\.\d\d, 0\.\d\d\]", rows[0])
    assert max(len(line) for line in out.stdout.splitlines()) <= 140


def test_runs_at_80_columns_keeps_ids_whole_and_wraps_the_label(stored):
    """Issue 28, reproduction 7 (`gym runs`)."""
    shown = narrow(gym("runs", db=stored))
    assert RUN_A in shown and RUN_B in shown
    assert LABEL not in shown  # the label wraps, at its spaces
    assert all(word in shown for word in ("temperature", "0.7", "system", "prompt"))
    assert re.search(r"\b18\b", shown)  # the episode count


def test_compare_at_80_columns_shows_the_difference_whole(stored):
    """Issue 28, reproduction 7 (`gym compare`)."""
    result = json.loads(gym("compare", RUN_A, RUN_B, "--json", db=stored))
    shown = narrow(gym("compare", RUN_A, RUN_B, db=stored))
    d = result["difference"]
    assert f"{d['value']:+.2f} [{d['lo']:+.2f}, {d['hi']:+.2f}]" in shown
    for name, count in result["transitions"].items():
        assert re.search(rf"{name.replace('_', ' ')}\s.*\b{count}\b", shown, re.S), name


def test_view_list_at_80_columns_keeps_ids_and_rewards_whole(stored):
    """Issue 28, reproduction 7 (`gym view --list`)."""
    items = json.loads(gym("view", RUN_B, "--list", "--json", db=stored))
    shown = narrow(gym("view", RUN_B, "--list", db=stored))
    assert len(items) == 18
    assert column(shown, 0) == [i["id"][:12] for i in items]
    assert column(shown, 4) == [i["outcome"] for i in items]
    assert column(shown, 5) == [f"{i['reward']:.2f}" for i in items]
    assert "left out at 80 columns: end" in shown  # two environments: the env stays


def test_env_list_at_80_columns_keeps_each_split_count_on_its_line():
    """Issue 28, reproduction 7 (`gym env list`)."""
    infos = json.loads(gym("env", "list", "--json"))
    shown = narrow(gym("env", "list"))
    for info in infos:
        assert info["id"] in shown
        for split, n in info["tasks"].items():
            assert re.search(rf"\b{split} {n}\b", shown), (info["id"], split)


def test_env_list_at_60_columns_keeps_each_id_on_one_line():
    """Issue cli58: at 60 columns `boxgym/BFCL-MultiTurn-v0` was cut to ``boxgym/BFCL-MultiTur…``."""
    infos = json.loads(gym("env", "list", "--json"))
    shown = narrow(gym("env", "list", columns=60), 60)
    assert all(info["id"] in shown for info in infos)
    assert "left out at 60 columns: family, max steps, status" in shown
    for info in infos:
        for split, n in info["tasks"].items():
            assert re.search(rf"\b{split} {n}\b", shown), (info["id"], split)


def cells(shown: str) -> set[str]:
    """Every cell's text of a printed table, each line of a cell on its own."""
    rows = [line.split("│")[1:-1] for line in shown.splitlines() if line.startswith("│")]
    return {part.strip() for row in rows for part in row}


def test_runs_at_60_columns_drops_the_envs_and_keeps_ids_whole(stored):
    """Review cli-p2, item 1: at 60 columns `gym runs` kept every column, folding each."""
    shown = narrow(gym("runs", db=stored, columns=60), 60)
    assert {RUN_A, RUN_B} <= cells(shown)
    assert "left out at 60 columns: envs (--json has all)" in shown
    assert "oracle" not in shown and "openai" in cells(shown)  # the policy whole


def test_runs_at_40_columns_keeps_ids_and_status_whole(stored):
    """Review cli-p2, item 1: at 40 columns `gym runs` squeezed policy, label and envs to
    nothing; the less important columns leave first and the ids stay whole."""
    shown = narrow(gym("runs", db=stored, columns=40), 40)
    assert {RUN_A, RUN_B} <= cells(shown)
    assert "left out at 40 columns: envs," in shown


@pytest.mark.parametrize("columns", [30, 40])
def test_listings_too_wide_for_a_table_print_records_with_names_whole(stored, columns):
    """Review cli-p2, item 1: at 40 columns `gym report` cut ``BFCL-MultiTur…`` and
    ``[0.02, 1…``, `gym view --list` cut ``rewa…``; a table whose ids and numbers cannot
    fit is printed as ``header: value`` records instead, nothing cut."""
    report = json.loads(gym("report", RUN_B, "--json", db=stored))
    shown = gym("report", RUN_B, db=stored, columns=columns)
    for g in report["envs"]:
        assert f"env: {g['name'].removeprefix('boxgym/')}\n" in shown
    assert "…" not in shown
    listed = gym("view", RUN_B, "--list", db=stored, columns=columns)
    items = json.loads(gym("view", RUN_B, "--list", "--json", db=stored))
    assert [line[9:] for line in listed.splitlines() if line.startswith("episode: ")] == [
        i["id"][:12] for i in items
    ]
    assert "…" not in listed and listed.count("reward: ") == len(items)


def test_report_at_60_columns_keeps_each_env_on_one_line(stored):
    """Issue cli58: at 60 columns the env column folded `PyFunc-v0` into ``PyF|unc|-v0``."""
    shown = narrow(gym("report", RUN_B, db=stored, columns=60), 60)
    assert "│ PyFunc-v0 " in shown and "│ SQL-v0 " in shown
    assert "left out at 60 columns: valid calls, tokens, flags" in shown


@pytest.mark.docker
def test_images_list_at_80_columns_keeps_digests_whole():
    """Issue 28, reproduction 7 (`gym images list`)."""
    records = json.loads(gym("images", "list", "--json"))
    shown = narrow(gym("images", "list"))
    for r in records:
        assert r["digest"][:19] in shown and str(r["size_mb"]) in shown


def _recorded(monkeypatch: pytest.MonkeyPatch, module: Any) -> Console:
    screen = Console(width=80, record=True, file=io.StringIO())
    monkeypatch.setattr(module, "console", screen)
    return screen


def test_env_validate_table_at_80_columns_keeps_outcomes_whole(monkeypatch):
    """Issue 28, reproduction 7 (`gym env validate`): the per-task table."""
    import gym._cli as cli
    from gym._run._validate import TaskCheck

    screen = _recorded(monkeypatch, cli)
    checks = [
        TaskCheck(
            env_id="boxgym/SQL-v0",
            task_id="monthly-revenue-by-customer-segment",
            oracle=["pass", "pass"],
            noop="fail",
            perturbed="fail",
            regrade_identical=True,
            panel={"liar": "fail", "echo": "fail", "empty": "pass"},
            problems=["the noop policy passed: the hidden tests accept an empty answer"],
        )
    ]
    cli._validation_table(checks)
    shown = narrow(screen.export_text())
    assert "pass,pass" in shown and "identical" in shown
    assert column(shown, 1) == ["monthly-revenue-by-customer-segment"]  # folded, whole


def test_redteam_table_at_80_columns_keeps_the_held_column_whole(monkeypatch):
    """Issue 28, reproduction 7 (`gym redteam`): the table of rows."""
    from gym._cli import _redteam
    from gym._redteam import Report

    screen = _recorded(monkeypatch, _redteam)
    report = Report.model_validate(_suite())
    _redteam._table(report)
    shown = narrow(screen.export_text())
    assert "no (gap: " in shown and "yes" in shown


def _suite() -> dict[str, Any]:
    row = {
        "name": "pyfunc.conftest_plant[tests_touched]",
        "kind": "attack",
        "env": "boxgym/PyFunc-v0",
        "expected": "fail with the flag tests_touched (a conftest.py planted under tests/)",
        "observed": "fail: flags tests_touched, conftest_planted; reward 0.00",
        "held": True,
        "seconds": 12.5,
    }
    gap = {**row, "name": "sql.state_diff[code_run_at_restore]", "held": False, "gap": "#27"}
    return {"rows": [row, gap], "seed": 0, "runtime": "runc", "seconds": 30.0}


def test_fit_gives_numbers_their_width_and_shares_the_rest():
    table = Table(number("n"), text("words"), number("interval"))
    table.add_row("12", "a b c d e f g h i j k l m n o p q r s t u v w x y z " * 4, "[0.12, 0.88]")
    fitted = fit(table, 40)
    widths = [c.width for c in fitted.columns]
    assert widths[0] == 2 and widths[2] == len("[0.12, 0.88]")
    assert sum(w or 0 for w in widths) + 3 * 2 + 4 == 40


def test_fit_drops_the_named_columns_only_when_the_numbers_do_not_fit():
    table = Table(text("name"), number("big"), number("extra"))
    table.add_row("x", "9" * 30, "8" * 30)
    assert [c.header for c in fit(table, 80, drop=("extra",)).columns] == ["name", "big", "extra"]
    assert [c.header for c in fit(table, 60, drop=("extra",)).columns] == ["name", "big"]
    screen = Console(width=60, record=True, file=io.StringIO())
    print_table(table, screen, drop=("extra",))
    assert "9" * 30 in screen.export_text()


def test_explicit_columns_set_the_width_when_not_a_terminal(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    wide = subprocess.run([GYM, "env", "list"], capture_output=True, text=True, env=env)
    assert max(len(line) for line in wide.stdout.splitlines()) > 80  # 140 by default
    assert max(len(line) for line in narrow(gym("env", "list")).splitlines()) <= 80


def test_a_colon_name_in_a_cell_is_measured_as_written():
    """The CLI's consoles print ``:smile:`` as written (no emoji): a number cell holding
    one gets its whole width, not an emoji's two columns."""
    table = Table(number("id"), text("words"))
    table.add_row(":smile:-v0", "a b c d e f g h i j k l m n o p q r s t u v w x y z " * 4)
    assert fit(table, 40).columns[0].width == len(":smile:-v0")


def test_a_words_column_wraps_at_spaces_and_never_breaks_a_word():
    """Review cli-p2, item 1: env names in `gym runs` were folded (``BFCL-``/``MultiTurn``)."""
    table = Table(number("run"), words("envs"), text("label"))
    table.add_row("c1a55e5b0a5e1100", "BFCL-MultiTurn-v0, PyFunc-v0", "a b c d e f g h " * 4)
    screen = Console(width=50, record=True, file=io.StringIO())
    print_table(table, screen)
    shown = narrow(screen.export_text(), 50)
    assert "BFCL-MultiTurn-v0," in shown and "PyFunc-v0" in shown
