"""The run store on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import json
import time

import pytest
from sqlmodel import select
from store_rows import episode, run_row, steps, verdict

import gym.errors
from gym._store import RunRow, StepRow, Store, TurnsRow, ValidationRow
from gym._store._models import RunStatusRow
from gym.errors import StoreError


def test_an_episode_is_committed_with_its_steps_and_verdict(store):
    store.ensure_run(run_row())
    store.commit_episode(episode("e1"), steps("e1"), verdict("e1"))
    assert store.episode_outcomes("run1") == {"e1": "pass"}
    assert [s.index for s in store.steps("e1")] == [0, 1]
    assert store.steps("e1")[0].logprobs == [-0.1, -0.2]
    assert store.verdicts("run1")["e1"].flags[0]["name"] == "loop"
    assert store.episode("e1").messages == [{"role": "user", "content": "hi"}]


def test_a_failed_commit_leaves_nothing_behind(store, monkeypatch):
    store.ensure_run(run_row())
    bad_steps = steps("e2") + [StepRow(episode_id="no-such-episode", index=5)]  # FK violation
    with pytest.raises(StoreError):
        store.commit_episode(episode("e2"), bad_steps, verdict("e2"))
    assert store.episode_outcomes("run1") == {}
    assert store.steps("e2") == []


def test_recommitting_an_episode_replaces_it_without_duplicates(store):
    store.ensure_run(run_row())
    store.commit_episode(episode("e3", "infra_error"), steps("e3", 1), None)
    store.commit_episode(episode("e3", "pass"), steps("e3", 3), verdict("e3"))
    assert store.episode_outcomes("run1") == {"e3": "pass"}
    assert len(store.steps("e3")) == 3 and len(store.verdicts("run1")) == 1


def test_runs_are_found_by_unique_prefix(store):
    store.ensure_run(run_row("abc123"))
    store.ensure_run(run_row("abd456"))
    assert store.run("abc").id == "abc123"
    with pytest.raises(StoreError, match="2 runs"):
        store.run("ab")
    with pytest.raises(StoreError, match="no run"):
        store.run("zzz")


def test_ensure_run_is_idempotent(store):
    first = store.ensure_run(run_row())
    again = store.ensure_run(run_row())
    assert again.created_at == first.created_at and len(store.runs()) == 1


def test_a_regrade_adds_a_current_verdict_and_keeps_the_old(store):
    store.ensure_run(run_row())
    store.commit_episode(episode("e4"), steps("e4"), verdict("e4"))
    (graded,) = store.episodes("run1")
    assert store.add_verdict(verdict("e4", "fail"), outcome="fail", reward=0.0, graded=graded)
    assert store.verdicts("run1")["e4"].outcome == "fail"
    assert store.episode("e4").outcome == "fail"


def test_an_unreachable_database_is_a_store_error(tmp_path):
    with pytest.raises(StoreError, match="cannot open the run store"):
        Store(f"postgresql://nobody@/nodb?host={tmp_path}")


def test_messages_show_the_url_without_its_password(tmp_path):
    with pytest.raises(StoreError) as info:
        Store(f"postgresql://bob:s3cret@/nodb?host={tmp_path}")
    message = str(info.value)
    assert "s3cret" not in message and "postgresql://bob:***@/nodb" in message


def test_call_counts_count_valid_calls_per_episode(store):
    store.ensure_run(run_row())
    store.commit_episode(episode("v1"), steps("v1", 3), verdict("v1"))
    rejected = [
        StepRow(episode_id="v2", index=0, tool="", error="unknown tool 'python'"),
        StepRow(episode_id="v2", index=1, tool="bash", arguments={"command": "ls"}),
    ]
    store.commit_episode(episode("v2", "fail"), rejected, None)
    store.commit_episode(episode("v3", "infra_error"), [], None)  # no steps: not listed
    store.ensure_run(run_row("run2"))
    store.commit_episode(episode("w1", run_id="run2"), steps("w1", 1), None)
    assert store.call_counts("run1") == {"v1": (3, 3), "v2": (1, 2)}


def test_report_and_cli_show_the_valid_call_rate(tmp_path):
    from typer.testing import CliRunner

    from gym._cli import app
    from gym._reports._report import build_report

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    s = Store(url)
    s.ensure_run(run_row())
    s.commit_episode(episode("v1"), steps("v1", 3), verdict("v1"))
    bad = [StepRow(episode_id="v2", index=0, tool="", error="action is not JSON")]
    s.commit_episode(episode("v2", "fail"), bad, None)
    report = build_report(s, "run1")
    assert report.overall.valid_call_rate == pytest.approx(3 / 4)
    assert report.envs[0].valid_call_rate == pytest.approx(3 / 4)
    s.close()
    empty = Store(f"sqlite:///{tmp_path / 'empty.db'}")
    empty.ensure_run(run_row())
    empty.commit_episode(episode("x"), [], None)
    assert build_report(empty, "run1").overall.valid_call_rate is None  # no steps: no rate
    empty.close()
    out = CliRunner().invoke(app, ["report", "run1", "--db", url], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "valid calls" in out.output and "0.75" in out.output


def test_gym_report_without_a_run_id_reports_the_newest_run(tmp_path):
    from typer.testing import CliRunner

    from gym._cli import app

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    nothing = CliRunner().invoke(app, ["report", "--db", url])
    assert isinstance(nothing.exception, StoreError) and "`gym run`" in str(nothing.exception)
    s = Store(url)
    older = run_row("older")
    older.created_at -= 60
    s.ensure_run(older)
    s.commit_episode(episode("o1", run_id="older"), [], None)
    s.ensure_run(run_row("newer"))
    s.commit_episode(episode("n1", "fail", run_id="newer"), [], None)
    s.close()
    out = CliRunner().invoke(app, ["report", "--db", url, "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["run_id"] == "newer"
    assert "run newer (the newest of 2" in out.stderr


# -- run status (issue 28, defect 3) and deletion (defect 2) ----------------------------


def test_a_resume_given_a_label_renames_the_run_and_one_without_keeps_it(store):
    def labelled(label: str) -> RunRow:
        row = run_row()
        row.label = label
        return row

    store.start_run(labelled("first"), planned=2)
    store.end_run("run1", "stopped", "Ctrl-C")
    store.start_run(labelled(""), planned=2)
    assert store.run("run1").label == "first"
    store.end_run("run1", "stopped", "Ctrl-C")
    store.start_run(labelled("second"), planned=2)
    assert store.run("run1").label == "second"


def test_a_run_is_running_then_stopped_by_who_then_running_again_on_resume(store):
    """Defect 3: a stopped run says so, with the planned count, who stopped it and when."""
    store.start_run(run_row(), planned=16)
    for i in range(3):
        store.commit_episode(episode(f"s{i}"), steps(f"s{i}", 1), verdict(f"s{i}"))
    running = store.run_status("run1")
    assert (running.state, running.planned, running.episodes, running.ended_at) == (
        "running",
        16,
        3,
        None,
    )
    assert running.label() == "running 3/16" and "3 of 16 planned; running" in running.summary()
    store.end_run("run1", "stopped", "Ctrl-C")
    stopped = store.run_status("run1")
    assert (stopped.state, stopped.detail) == ("stopped", "Ctrl-C") and stopped.ended_at
    assert stopped.summary().startswith("3 of 16 planned; stopped by Ctrl-C at ")
    store.start_run(run_row(), planned=18)  # the same command again (two tasks added since)
    again = store.run_status("run1")
    assert (again.state, again.planned, again.detail, again.ended_at) == ("running", 18, "", None)
    store.end_run("run1", "finished")
    assert store.run_status("run1").label() == "finished 3/18"


def test_a_failed_run_keeps_its_error_line(store):
    store.start_run(run_row(), planned=2)
    store.end_run("run1", "failed", "error: no Docker engine answers at unix:///x.sock")
    status = store.run_status("run1")
    assert status.state == "failed"
    assert status.summary().endswith(": no Docker engine answers at unix:///x.sock")


def test_a_running_run_without_a_heartbeat_is_interrupted(store):
    """Defect 3: a run whose process was killed (no heartbeat) is not shown running."""
    store.start_run(run_row(), planned=4)
    strict = Store(store.url, stale_after=30)
    assert strict.run_status("run1").state == "running"
    with store.session() as s:  # its last beat 45 s ago (no sleep: a loaded machine is slow)
        status = s.get(RunStatusRow, "run1")
        assert status is not None
        status.updated_at -= 45
        s.add(status)
        s.commit()
    assert strict.run_status("run1").state == "interrupted"
    assert store.run_status("run1").state == "running"  # within the default bound
    store.heartbeat("run1")
    assert strict.run_status("run1").state == "running"  # a beat makes it fresh again
    assert "interrupted" not in strict.run_status("run1").summary()
    strict.close()


def test_run_statuses_give_every_run_with_its_episode_count(store):
    store.start_run(run_row("a1"), planned=2)
    store.commit_episode(episode("x1", run_id="a1"), [], None)
    store.ensure_run(run_row("b2"))  # stored without a status: counts only
    statuses = store.run_statuses()
    assert set(statuses) == {"a1", "b2"}
    assert (statuses["a1"].episodes, statuses["a1"].planned) == (1, 2)
    assert (statuses["b2"].episodes, statuses["b2"].planned) == (0, 0)


def row_counts(store: Store) -> dict[str, int]:
    from sqlalchemy import text

    tables = ["runs", "run_status", "episodes", "steps", "episode_turns", "verdicts", "train_steps"]
    tables += ["episode_lineage", "run_owner"]
    with store.engine.connect() as conn:
        return {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in tables}


def filled(store: Store, run_id: str, n: int) -> None:
    from gym._store import TrainStepRow

    store.start_run(run_row(run_id), planned=n)
    for i in range(n):
        eid = f"{run_id}-e{i}"
        turns = TurnsRow(episode_id=eid, tools=[{"name": "bash"}], step_turns=[0, 0])
        store.commit_episode(episode(eid, run_id=run_id), steps(eid, 2), verdict(eid), turns)
    store.add_train_step(TrainStepRow(train_id=run_id, step=0, run_id=run_id, created_at=0.0))
    store.end_run(run_id, "finished")


def test_deleting_a_run_removes_every_row_of_it_and_nothing_else(store):
    """Defect 2: a run can be deleted, with its episodes, steps, turns, verdicts and train
    steps."""
    filled(store, "gone", 3)
    filled(store, "kept", 2)
    before = row_counts(store)
    assert store.delete_runs(["gone"], dry_run=True)["episodes"] == 3
    assert row_counts(store) == before  # a dry run deletes nothing
    counts = store.delete_runs(["gone"])
    after = row_counts(store)
    expected = {"runs": 1, "run_status": 1, "episodes": 3, "steps": 6, "verdicts": 3}
    expected["run_owner"] = 1  # the process that held it
    expected["episode_turns"] = 3
    expected["episode_lineage"] = 0  # none of them was forked (tests/_envs/test_fork.py)
    assert counts == {**expected, "train_steps": 1}
    assert {t: before[t] - after[t] for t in before} == counts
    assert [r.id for r in store.runs()] == ["kept"] and len(store.episodes("kept")) == 2
    assert store.steps("gone-e0") == [] and store.verdicts("gone") == {}
    assert store.run_turns("gone") == {} and set(store.run_turns("kept")) == {"kept-e0", "kept-e1"}


def test_a_running_run_is_deleted_only_by_force(store):
    store.start_run(run_row("live"), planned=5)
    with pytest.raises(gym.errors.ConfigError, match="running now"):
        store.delete_runs(["live"])
    assert [r.id for r in store.runs()] == ["live"]
    assert store.delete_runs(["live"], force=True)["runs"] == 1
    assert store.runs() == []


def test_an_ambiguous_prefix_lists_the_runs_it_matches(store):
    store.ensure_run(run_row("abc123"))
    store.ensure_run(run_row("abd456"))
    with pytest.raises(StoreError, match="2 runs matching 'ab'.*abc123, abd456; give more"):
        store.run("ab")


def old_store(url: str) -> None:
    """The tables as boxgym made them before runs had a status (no run_status table)."""
    from sqlmodel import SQLModel, create_engine

    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    old = [t for t in SQLModel.metadata.sorted_tables if t.name != "run_status"]
    SQLModel.metadata.create_all(engine, tables=old)
    with engine.begin() as conn:
        from sqlalchemy import text

        conn.execute(
            text(
                "INSERT INTO runs (id, created_at, updated_at, config, policy, boxgym_version,"
                " label) VALUES ('old1', 1.0, 2.0, '{\"envs\": [\"e\"]}', 'oracle', '0.1', '')"
            )
        )
    engine.dispose()


@pytest.fixture
def old_url(url):
    old_store(url)
    return url


def test_a_store_written_before_run_status_is_read_and_then_migrated(old_url):
    reader = Store(old_url, read_only=True)  # the viewer: no table may be created
    status = reader.run_status("old1")
    assert (status.state, status.planned, status.episodes) == ("finished", 0, 0)
    assert status.summary() == "0 episodes; status not recorded (stored by an older boxgym)"
    assert list(reader.run_statuses()) == ["old1"]
    writer = Store(old_url)  # a read-write open adds the table
    writer.commit_episode(episode("o1", run_id="old1"), steps("o1", 1), None)
    assert reader.run_status("old1").episodes == 1
    writer.start_run(run_row("old1"), planned=3)
    assert reader.run_status("old1").label() == "running 1/3"  # the reader sees it now
    assert writer.run("old1").created_at == 1.0  # the old row is kept as it was
    reader.close()
    writer.close()


def validation_row(fingerprint: str = "fp1", ok: bool = True, **result: object) -> ValidationRow:
    return ValidationRow(
        env_id="e/E-v0",
        task_id="T/1",
        fingerprint=fingerprint,
        ok=ok,
        result={"task_id": "T/1", "problems": [], **result},
        finished_at=time.time(),
    )


def test_a_validation_result_is_found_under_its_fingerprint_only(store):
    store.keep_validation(validation_row(oracle=["pass"]))
    found = store.validation("e/E-v0", "T/1", "fp1")
    assert found is not None and found.ok and found.result["oracle"] == ["pass"]
    assert store.validation("e/E-v0", "T/1", "fp2") is None
    assert store.validation("e/E-v0", "T/2", "fp1") is None
    store.keep_validation(validation_row(ok=False, problems=["noop: pass"]))  # replaced
    reopened = Store(store.url)
    again = reopened.validation("e/E-v0", "T/1", "fp1")
    reopened.close()
    assert again is not None and not again.ok and again.result["problems"] == ["noop: pass"]
    with store.session() as s:
        assert len(list(s.exec(select(ValidationRow)))) == 1


def test_a_store_written_before_validations_gains_the_table(tmp_path):
    from sqlmodel import SQLModel, create_engine

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = create_engine(url)
    old = [t for t in SQLModel.metadata.sorted_tables if t.name != "validations"]
    SQLModel.metadata.create_all(engine, tables=old)
    engine.dispose()
    store = Store(url)
    assert store.validation("e/E-v0", "T/1", "fp1") is None
    store.keep_validation(validation_row())
    assert store.validation("e/E-v0", "T/1", "fp1") is not None
    store.close()
