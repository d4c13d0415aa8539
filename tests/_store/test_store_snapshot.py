"""`Store.snapshot`: the reads of one block see one moment of a store others write.

Real SQLite (a file in WAL mode) and a real PostgreSQL server; the writer is another
`Store` object (other connections), as another process running the run would be.
"""

from __future__ import annotations

import threading
import time

import pytest
from store_rows import episode, run_row, steps, verdict

from gym._reports._records import write_records
from gym._reports._report import build_report
from gym._store import EpisodeRow, RunRow, Store, VerdictRow
from gym.errors import StoreError


@pytest.fixture
def opened(url):
    """Open a `Store` (a class of it, its options) on the test's store; all closed after."""
    made: list[Store] = []

    def open_store(kind: type[Store] = Store, *args, **options) -> Store:
        made.append(kind(url, *args, **options))
        return made[-1]

    yield open_store
    for store in made:
        store.close()


@pytest.fixture
def writer(url):
    """The store as the process running the run has it, holding episode e1."""
    s = Store(url)
    s.ensure_run(run_row(config={}))
    commit(s, "e1")
    yield s
    s.close()


def commit(store: Store, eid: str, outcome: str = "pass") -> None:
    """Commit an episode with two steps and a verdict flagged ``loop``."""
    row = episode(eid, outcome, task_id=f"t-{eid}", reward=1.0 if outcome == "pass" else 0.0)
    graded = verdict(eid, outcome, reward=row.reward)
    assert store.commit_episode(row, steps(eid, detail=False), graded)


def seen(store: Store) -> dict[str, list[str]]:
    """The episode ids each read of run1 shows."""
    return {
        "episodes": [e.id for e in store.episodes("run1")],
        "verdicts": sorted(store.verdicts("run1")),
        "run_steps": sorted(store.run_steps("run1")),
        "call_counts": sorted(store.call_counts("run1")),
        "outcomes": sorted(store.episode_outcomes("run1")),
        "status": [str(store.run_status("run1").episodes)],
    }


def at(ids: list[str]) -> dict[str, list[str]]:
    """What `seen` shows when the store holds exactly these episodes."""
    keys = ("episodes", "verdicts", "run_steps", "call_counts", "outcomes")
    return {**{k: ids for k in keys}, "status": [str(len(ids))]}


@pytest.mark.parametrize("read_only", [False, True], ids=["read-write", "read-only"])
def test_a_snapshot_does_not_see_commits_made_while_it_is_open(opened, writer, read_only):
    reader = opened(read_only=read_only)
    with reader.snapshot():
        assert seen(reader) == at(["e1"])
        commit(writer, "e2")  # another connection commits an episode, its verdict, steps
        assert seen(writer) == at(["e1", "e2"])  # committed: the writer reads it
        assert seen(reader) == at(["e1"])  # the snapshot does not
    assert seen(reader) == at(["e1", "e2"])  # once it ended, reads see it


def test_a_snapshot_is_taken_when_it_opens_not_at_its_first_read(opened, writer):
    reader = opened(read_only=True)
    with reader.snapshot():
        commit(writer, "e2")
        assert seen(reader) == at(["e1"])


def test_a_snapshot_holds_for_its_thread_only(opened, writer):
    reader = opened()
    other: dict[str, list[str]] = {}
    with reader.snapshot():
        commit(writer, "e2")
        thread = threading.Thread(target=lambda: other.update(seen(reader)))
        thread.start()
        thread.join()
        assert seen(reader) == at(["e1"])
    assert other == at(["e1", "e2"])  # the same Store in another thread: not in it


def test_a_snapshot_inside_a_snapshot_is_the_same_one(opened, writer):
    with writer.snapshot():
        with writer.snapshot():
            assert seen(writer) == at(["e1"])
        commit(opened(), "e2")
        assert seen(writer) == at(["e1"])  # the inner one's end did not end the outer


def test_writes_inside_a_snapshot_are_refused(url, writer):
    with writer.snapshot():
        with pytest.raises(StoreError, match="snapshot"):
            commit(writer, "e2")
        with pytest.raises(StoreError, match="snapshot"):
            writer.end_run("run1", "finished")
        with pytest.raises(StoreError, match="snapshot"), writer.session() as s:
            s.add(
                RunRow(
                    id="r2", created_at=0, updated_at=0, config={}, policy="x", boxgym_version="0"
                )
            )
            s.commit()
        assert seen(writer) == at(["e1"])
    commit(writer, "e2")  # after it, writes go through
    assert [r.id for r in writer.runs()] == ["run1"]
    assert seen(writer) == at(["e1", "e2"])


class _Interleaved(Store):
    """A store read while another process commits, at the worst moment: right after the
    reader's first read of the run's episodes (the ``writes`` it is given, once)."""

    def __init__(self, url: str, writes: list) -> None:
        super().__init__(url, read_only=True)
        self.writes = writes

    def episodes(self, run_id: str) -> list[EpisodeRow]:
        found = super().episodes(run_id)
        while self.writes:
            self.writes.pop(0)()
        return found


def test_a_report_reads_its_run_in_one_snapshot(opened, writer):
    reader = opened(_Interleaved, [lambda: commit(writer, "e2", "fail")])
    report = build_report(reader, "run1")
    assert reader.writes == []  # e2 was committed while the report was read
    assert report.overall.episodes == report.status.episodes == 1
    assert (report.overall.passed, report.overall.failed) == (1, 0)
    assert report.overall.flags == {"loop": 1}
    assert report.overall.valid_call_rate == 1.0
    assert build_report(reader, "run1").status.episodes == 2  # read afresh: e2 is there


def test_records_read_their_run_in_one_snapshot(opened, writer, tmp_path):
    commit(writer, "e2", "fail")
    (graded,) = [e for e in writer.episodes("run1") if e.id == "e2"]
    verdict = VerdictRow(
        episode_id="e2", created_at=time.time(), outcome="pass", reward=1.0, verified=True
    )

    def regrade() -> None:  # e2 regraded: a verified pass, after the records read it failed
        assert writer.add_verdict(verdict, outcome="pass", reward=1.0, graded=graded)

    reader = opened(_Interleaved, [regrade])
    out = tmp_path / "records.jsonl"
    assert write_records(reader, "run1", out, only_verified=True) == 0  # none verified yet
    assert reader.writes == []
    assert write_records(reader, "run1", out, only_verified=True) == 1  # now e2 is
