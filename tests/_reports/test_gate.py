"""`gym gate`: a rules file that checks nothing is refused, and a rule that matches no
episode fails (a misspelled table or env filter must not pass a CI gate silently)."""

from __future__ import annotations

from pathlib import Path

import pytest
from store_rows import episode, run_row

from gym._cli._app import run_cli
from gym._store import Store

ENV = "boxgym/PyFunc-v0"


@pytest.fixture
def db(tmp_path: Path) -> str:
    """A store whose run r1 has two passes of PyFunc-v0."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store = Store(url)
    store.ensure_run(run_row("r1", config={"envs": [ENV]}, policy="noop"))
    for eid in ("e1", "e2"):
        tags = {"difficulty": "easy"}
        row = episode(eid, run_id="r1", env_id=ENV, task_id=f"task-{eid}", tags=tags)
        store.commit_episode(row, [], None)
    store.close()
    return url


def gate(capsys, db: str, tmp_path: Path, rules: str, *more: str) -> tuple[int, str, str]:
    path = tmp_path / "rules.toml"
    path.write_text(rules)
    code = run_cli(["gate", *(more or ["r1"]), "--rules", str(path), "--db", db])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(
    ("rules", "said"),
    [
        ("", "no [[rule]] table"),
        ('[[rules]]\nkind = "min_pass_rate"\nvalue = 0.99\n', "unknown top-level key rules"),
        (
            '[[rule]]\nkind = "min_pass_rate"\nthreshold = 3\n',
            "[[rule]] number 1: threshold: unknown key (allowed: kind, value, env, slice",
        ),
        ('[[rule]]\nkind = "min_rate"\n', "[[rule]] number 1: kind = 'min_rate'"),
    ],
)
def test_a_rules_file_that_checks_nothing_or_has_an_unknown_key_is_refused(
    capsys, db, tmp_path, rules, said
):
    code, out, err = gate(capsys, db, tmp_path, rules)
    assert code == 2 and out == ""
    assert err.startswith("error: gate rules ") and said in err, err
    assert err.count("\n") == 1
    assert "[[rule]]" in err


@pytest.mark.parametrize(
    "rule",
    [
        '[[rule]]\nkind = "max_infra_rate"\nvalue = 0.0\nenv = "boxgym/Typo-v0"\n',
        '[[rule]]\nkind = "min_pass_rate"\nvalue = 0.0\nslice = "difficulty=hard"\n',
    ],
)
def test_a_rule_matching_no_episode_fails_saying_so(capsys, db, tmp_path, rule):
    code, out, _ = gate(capsys, db, tmp_path, rule)
    assert code == 1
    assert out.startswith("FAIL ") and "matched no episode of the run" in out, out


@pytest.mark.parametrize("env", [ENV, "PyFunc-v0"])
def test_the_env_filter_takes_the_id_or_the_name_a_report_prints(capsys, db, tmp_path, env):
    code, out, _ = gate(
        capsys, db, tmp_path, f'[[rule]]\nkind = "min_pass_rate"\nvalue = 1.0\nenv = "{env}"\n'
    )
    assert code == 0 and out.startswith("pass min_pass_rate pass rate 1.000"), out


@pytest.mark.parametrize(
    "rule",
    [
        '[[rule]]\nkind = "no_regression"\n',
        '[[rule]]\nkind = "max_drop"\nvalue = 0.1\n',
        '[[rule]]\nkind = "min_pass_rate"\nvalue = 0.0\n',
    ],
)
def test_a_run_of_infra_errors_only_fails_every_pass_rate_rule(capsys, db, tmp_path, rule):
    """A baseline passing every task and a run of infra errors passed no_regression
    ("0 regressed") and max_drop (helper J): the tasks fell out of the comparison."""
    store = Store(db)
    store.ensure_run(run_row("r2", config={"envs": [ENV]}, policy="noop"))
    for eid in ("e1", "e2"):
        row = episode(f"r2{eid}", "infra_error", run_id="r2", env_id=ENV, task_id=f"task-{eid}")
        store.commit_episode(row, [], None)
    store.close()
    code, out, _ = gate(capsys, db, tmp_path, rule, "r2", "--baseline", "r1")
    assert code == 1 and out.startswith("FAIL "), out
    assert "not graded" in out or "checked nothing" in out, out
