"""One process holds a run at a time; the first commit of an episode wins; a new store opens
from several processes at once.

Two `gym run`s of the same run were both accepted and each replaced the other's committed
episodes (a ``pass`` became the other's ``infra_error``); three processes opening a new
SQLite store at once failed with ``table runs already exists`` in all but one.
"""

from __future__ import annotations

import multiprocessing
import socket
import threading
import time

import pytest
from sqlmodel import col, select
from store_rows import rows, run_row

from gym._store import LeaseLost, RunBusy, RunStatusRow, Store, VerdictRow
from gym._store._lineage import LineageRow

A, B = "host-a:101:5", "host-b:202:7"  # processes on other hosts: alive as far as we know


def age_heartbeat(store: Store, run_id: str, seconds: float) -> None:
    """Make the run's last beat ``seconds`` old (its process stopped beating)."""
    with store.session() as s:
        status = s.get(RunStatusRow, run_id)
        assert status is not None
        status.updated_at = time.time() - seconds
        s.add(status)
        s.commit()


def test_a_second_process_is_refused_while_the_first_beats(store):
    store.start_run(run_row(config={}), planned=4, owner=A)
    store.heartbeat("run1", owner=A)
    with pytest.raises(RunBusy, match=r"run run1 is running now in another process \(host-a"):
        store.start_run(run_row(config={}), planned=9, owner=B)
    status = store.run_status("run1")
    assert (status.state, status.planned) == ("running", 4)  # the first's, untouched
    store.heartbeat("run1", owner=A)  # the first still holds it
    store.end_run("run1", "finished", owner=A)
    store.start_run(run_row(config={}), planned=4, owner=B)  # a run that ended is free to resume


def test_a_stale_holder_is_taken_over_and_then_refused(store):
    store.start_run(run_row(config={}), planned=4, owner=A)
    age_heartbeat(store, "run1", store.stale_after + 1)
    store.start_run(run_row(config={}), planned=4, owner=B)  # A stopped beating: B takes it over
    with pytest.raises(LeaseLost, match="taken over by another process"):
        store.heartbeat("run1", owner=A)
    with pytest.raises(LeaseLost):
        store.end_run("run1", "finished", owner=A)
    assert store.run_status("run1").state == "running"  # A's end was refused
    store.end_run("run1", "finished", owner=B)
    assert store.run_status("run1").state == "finished"


def test_a_holder_whose_process_is_gone_on_this_host_is_taken_over_at_once(store):
    dead = f"{socket.gethostname()}:999999999:1"  # no such pid
    store.start_run(run_row(config={}), planned=4, owner=dead)
    store.start_run(run_row(config={}), planned=4, owner=B)  # its beat is fresh, its process gone
    with pytest.raises(LeaseLost):
        store.heartbeat("run1", owner=dead)


def test_a_committed_episode_is_kept_against_a_later_commit(store):
    store.start_run(run_row(config={}), planned=1, owner=A)
    assert store.commit_episode(*rows("e1", "pass", 3), owner=A)
    assert not store.commit_episode(*rows("e1", "infra_error", 1), owner=A)  # a second commit
    assert not store.commit_episode(*rows("e1", "fail", 2), owner=A)
    assert store.episode_outcomes("run1") == {"e1": "pass"}
    assert len(store.steps("e1")) == 3 and store.verdicts("run1")["e1"].outcome == "pass"


def test_an_infra_error_is_replaced_by_the_next_commit_once(store):
    store.start_run(run_row(config={}), planned=1, owner=A)
    assert store.commit_episode(*rows("e1", "infra_error", 1), owner=A)
    assert store.commit_episode(*rows("e1", "pass", 2), owner=A)  # --retry-infra
    assert not store.commit_episode(*rows("e1", "infra_error", 1), owner=A)
    assert store.episode_outcomes("run1") == {"e1": "pass"} and len(store.steps("e1")) == 2


def test_a_branch_is_replaced_until_its_parent_is_stored(store):
    """A resumed training step grows a tree again: its branches first, then its parent."""
    store.start_run(run_row(config={}), planned=1, owner=A)
    lineage = LineageRow(episode_id="b1", parent_id="p1", fork_step=1)
    assert store.commit_episode(*rows("b1", "pass", 2), lineage=lineage, owner=A)
    assert store.commit_episode(*rows("b1", "fail", 3), lineage=lineage, owner=A)  # tree regrown
    assert store.commit_episode(*rows("p1", "pass", 1), owner=A)  # the tree is done
    assert not store.commit_episode(*rows("b1", "pass", 4), lineage=lineage, owner=A)
    assert store.episode_outcomes("run1") == {"b1": "fail", "p1": "pass"}


def test_a_process_that_lost_the_run_commits_nothing_more(store):
    """Before its next beat tells it, the old holder's commit is refused, not first to win."""
    store.start_run(run_row(config={}), planned=2, owner=A)
    age_heartbeat(store, "run1", store.stale_after + 1)  # A stopped beating (paused, cut off)
    store.start_run(run_row(config={}), planned=2, owner=B)  # B takes the run over
    with pytest.raises(LeaseLost, match="taken over by another process"):
        store.commit_episode(*rows("e1", "pass", 2), owner=A)
    assert store.episode_outcomes("run1") == {}  # nothing of A's written
    assert store.commit_episode(*rows("e1", "fail", 3), owner=B)  # B's stands
    assert store.episode_outcomes("run1") == {"e1": "fail"} and len(store.steps("e1")) == 3


def test_a_run_nobody_claimed_takes_any_commit(store):
    store.ensure_run(run_row(config={}))
    assert store.commit_episode(*rows("e1", "pass", 1), owner=B)


def test_a_regrade_of_a_replaced_attempt_records_nothing(store):
    """``--retry-infra`` replaced the episode after the regrade read it: the old attempt's
    verdict would land on the new one."""
    store.start_run(run_row(config={}), planned=1, owner=A)
    ep, st, v = rows("e1", "infra_error", 1)
    ep.export = {"state": "old attempt"}
    assert store.commit_episode(ep, st, v, owner=A)
    (graded,) = store.episodes("run1")  # the regrade reads it
    again, st, v = rows("e1", "pass", 2)
    again.export = {"state": "new attempt"}
    assert store.commit_episode(again, st, v, owner=A)  # the retry replaces it
    stale = VerdictRow(episode_id="e1", created_at=time.time(), outcome="fail", reward=0.0)
    assert not store.add_verdict(stale, outcome="fail", reward=0.0, graded=graded)
    assert store.episode("e1").outcome == "pass"
    assert store.verdicts("run1")["e1"].outcome == "pass"
    (current,) = store.episodes("run1")
    fresh = VerdictRow(episode_id="e1", created_at=time.time(), outcome="fail", reward=0.0)
    assert store.add_verdict(fresh, outcome="fail", reward=0.0, graded=current)
    assert store.verdicts("run1")["e1"].outcome == "fail"


def current_verdicts(store: Store, episode_id: str) -> int:
    with store.session() as s:
        query = select(VerdictRow).where(
            VerdictRow.episode_id == episode_id, col(VerdictRow.current).is_(True)
        )
        return len(s.exec(query).all())


def test_regrades_at_once_leave_one_current_verdict(store):
    store.start_run(run_row(config={}), planned=1, owner=A)
    store.commit_episode(*rows("e1", "fail", 1), owner=A)
    (graded,) = store.episodes("run1")

    def regrade(ready: threading.Barrier) -> None:
        ready.wait()
        verdict = VerdictRow(episode_id="e1", created_at=time.time(), outcome="fail")
        store.add_verdict(verdict, outcome="fail", reward=0.0, graded=graded)

    for _ in range(20):
        ready = threading.Barrier(2)
        threads = [threading.Thread(target=regrade, args=(ready,)) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert current_verdicts(store, "e1") == 1


def _open(url: str, ready) -> None:
    ready.wait()
    Store(url).ping()  # an error exits the process with status 1 (its traceback on stderr)


def test_processes_opening_a_new_store_at_once_all_succeed(url):
    ctx = multiprocessing.get_context("fork")
    ready = ctx.Event()
    procs = [ctx.Process(target=_open, args=(url, ready)) for _ in range(3)]
    for p in procs:
        p.start()
    ready.set()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    store = Store(url)
    assert store.runs() == []
    store.close()
