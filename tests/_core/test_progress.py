"""Progress of long work (`gym._core._progress`): counts, rate and ETA, plain lines, heartbeats.

Issue 28, defect 5: `gym run` showed ``0/?`` until the first episode ended and nothing
outside a terminal until the end; the validate ETA read 1 s for 40 s (computed before
any task finished, or from resumed tasks); the main job's log had no line of progress.
The plain mode is tested on a fake clock; the heartbeat thread and the rich bar for real.
"""

from __future__ import annotations

import io
import time

import pytest
from rich.console import Console

from gym._core._progress import Progress, RunEvents, progress, progress_mode


class Clock:
    """A fake monotonic clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def plain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GYM_PROGRESS", "plain")
    monkeypatch.delenv("GYM_PROGRESS_INTERVAL", raising=False)


def lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def test_plain_mode_writes_a_line_per_n_items_and_start_and_end_lines(plain):
    """Defect 5: outside a terminal, a line at the start, one per N items, one at the end."""
    clock, out = Clock(), io.StringIO()
    with progress("run", 10, every=3, stream=out, heartbeat=False, clock=clock) as bar:
        assert lines(out) == ["[run] start: 10 episodes"]
        for _ in range(10):
            clock.now += 6
            bar.advance(1, None, **{"pass": 1})
    said = lines(out)
    assert [s.split(" · ")[0] for s in said[1:-1]] == [
        "[run] 3/10 episodes",
        "[run] 6/10 episodes",
        "[run] 9/10 episodes",
    ]
    assert said[1] == "[run] 3/10 episodes · 10/min · ETA 42 s · pass 3"
    assert said[-1] == "[run] finished: 10/10 episodes in 60 s · 10/min · pass 10"


def test_plain_mode_writes_a_line_per_30_s_when_items_are_slow(plain):
    """Defect 5: slow items still give a line every 30 s, not only every N items."""
    clock, out = Clock(), io.StringIO()
    with progress("run", 100, every=50, stream=out, heartbeat=False, clock=clock) as bar:
        clock.now += 10
        bar.advance()
        assert len(lines(out)) == 1  # only the start line: 1 item, 10 s
        clock.now += 21
        bar.advance()
        assert lines(out)[-1].startswith("[run] 2/100 episodes · ")
        clock.now += 5
        bar.advance()
        assert len(lines(out)) == 2  # the next is due 30 s after the last line


def test_the_eta_reads_dashes_until_an_item_finished(plain):
    """Defect 5: no ETA before one item finished ("ETA --"), not one made up from nothing."""
    clock, out = Clock(), io.StringIO()
    with progress("validate", 40, unit="tasks", stream=out, heartbeat=False, clock=clock) as bar:
        assert bar.eta() is None and bar.rate() is None
        clock.now += 31
        bar.tick()  # type: ignore[attr-defined]  # the plain mode's heartbeat
        assert lines(out)[-1] == (
            "[validate] still running: 0/40 tasks · running for 31 s · ETA --"
        )
        clock.now += 9
        bar.advance(2)  # a line per 2 items (a twentieth of 40)
        assert bar.eta() == pytest.approx(38 * 20)  # 38 left, 2 done in 40 s
        assert lines(out)[-1] == "[validate] 2/40 tasks · 3.0/min · ETA 13 min"


def test_skipped_items_count_neither_in_the_rate_nor_in_the_eta(plain):
    """Defect 5: resumed tasks finish at once; the rate and ETA must not count them."""
    clock, out = Clock(), io.StringIO()
    with progress("run", 10, skipped=6, stream=out, heartbeat=False, clock=clock) as bar:
        assert lines(out) == ["[run] start: 4 episodes (6 skipped: done before)"]
        bar.skip(2)  # found done as the work goes (validate's stored results)
        clock.now += 60
        bar.advance()
        assert bar.rate() == pytest.approx(1 / 60)
        assert bar.eta() == pytest.approx(60)  # 1 left of 2 to do, at 1 a minute
        assert lines(out)[-1] == "[run] 1/2 episodes (8 skipped) · 1.0/min · ETA 60 s"


def test_the_heartbeat_names_the_items_in_flight_and_the_oldest(plain):
    """Defect 5: one long item (minutes on the CPU model) never leaves the log silent."""
    clock, out = Clock(), io.StringIO()
    with progress("run", 3, stream=out, heartbeat=False, clock=clock) as bar:
        bar.begin("a")
        clock.now += 20
        bar.begin("b")
        clock.now += 10
        bar.tick()  # type: ignore[attr-defined]
        assert lines(out)[-1] == (
            "[run] still running: 0/3 episodes · 2 in flight, oldest 30 s · ETA --"
        )
        clock.now += 10
        bar.tick()  # type: ignore[attr-defined]
        assert len(lines(out)) == 2  # the next heartbeat is due 30 s after the last line
        clock.now += 65
        bar.advance(1, "a")
        bar.tick()  # type: ignore[attr-defined]
        assert lines(out)[-1].startswith("[run] 1/3 episodes · ")
        clock.now += 95
        bar.tick()  # type: ignore[attr-defined]
        assert "1 in flight, oldest 3 min 00 s" in lines(out)[-1]


def test_the_heartbeat_thread_writes_while_no_item_finishes(plain):
    """Defect 5: the heartbeat runs by itself (a real thread, a short interval)."""
    out = io.StringIO()
    with progress("run", 2, stream=out, interval=0.05) as bar:
        bar.begin("a")
        deadline = time.monotonic() + 10
        while "still running" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
    assert "[run] still running: 0/2 episodes · 1 in flight, oldest" in out.getvalue()


def test_an_interrupted_work_ends_with_a_stopped_line(plain):
    out = io.StringIO()
    with pytest.raises(KeyboardInterrupt):
        with progress("run", 5, stream=out, heartbeat=False) as bar:
            bar.advance(2)
            raise KeyboardInterrupt
    assert lines(out)[-1].startswith("[run] stopped: 2/5 episodes in ")


def test_the_mode_follows_the_terminal_unless_forced(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("GYM_PROGRESS", raising=False)
    assert progress_mode(io.StringIO()) == "plain"
    monkeypatch.setenv("GYM_PROGRESS", "off")
    assert progress_mode(io.StringIO()) == "off"
    out = io.StringIO()
    with progress("run", 2, stream=out) as bar:
        bar.advance(2)
    assert out.getvalue() == ""


def test_the_rich_mode_draws_counts_rate_and_the_eta(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("GYM_PROGRESS", "rich")
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120, color_system=None)
    with progress("validate", 4, skipped=1, unit="tasks", console=console) as bar:
        bar.advance(1, None, valid=1)
        bar.advance(1, None, invalid=1)
    shown = out.getvalue()
    assert "0/3 tasks (1 skipped) · ETA --" in shown  # drawn at the start
    assert "2/3 tasks (1 skipped)" in shown and "valid 1 invalid 1" in shown
    assert "[validate] stopped: 2/3 tasks (1 skipped) in " in shown


def test_run_events_show_each_run_from_its_plan_to_its_end(plain, monkeypatch):
    """`gym run` (and rft) drive the progress from the runner's events."""
    out, seen = io.StringIO(), []
    monkeypatch.setattr("sys.stderr", out)
    with RunEvents("run", also=seen.append, heartbeat=False) as sink:
        sink({"event": "planned", "total": 3, "skipped": 1, "label": "x"})
        sink({"event": "scheduled", "job": "j1"})
        assert isinstance(sink.bar, Progress) and set(sink.bar.flight) == {"j1"}
        sink({"event": "committed", "job": "j1", "outcome": "infra_error"})
        assert sink.bar.flight == {}
        sink({"event": "committed", "job": "j2", "outcome": "pass"})
        sink({"event": "done"})
        assert sink.bar is None
    said = lines(out)
    assert said[0] == "[run] start: 2 episodes (1 skipped: done before)"
    assert said[1].startswith("[run] 1/2 episodes (1 skipped) · ") and said[1].endswith("infra 1")
    assert said[-1].startswith("[run] finished: 2/2 episodes (1 skipped) in ")
    assert len(seen) == 5  # every event goes on to the --events log


def test_a_stop_says_what_becomes_of_the_episodes_in_flight(plain, monkeypatch):
    """The note said "finishing those in flight" and they were dropped after 3 s unsaid."""
    out = io.StringIO()
    monkeypatch.setattr("sys.stderr", out)
    with RunEvents("run", heartbeat=False) as sink:
        sink({"event": "planned", "total": 3})
        sink({"event": "scheduled", "job": "j1"})
        sink({"event": "stopping", "not_started": 2, "in_flight": 1, "grace": 3.0})
        sink({"event": "stopped", "abandoned": 1})
    said = lines(out)
    assert any(
        "stopping: 2 not started; 1 in flight get 3 s to finish, then are abandoned" in line
        for line in said
    ), said
    assert any("1 in flight abandoned, not committed" in line for line in said), said


def test_a_stream_closed_by_its_reader_stops_the_lines_not_the_work(plain):
    """`gym run ... 2>&1 | head -2` failed the run at its next progress line."""

    class Closed(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    with progress("run", 3, unit="episodes", stream=Closed(), heartbeat=False) as bar:
        for _ in range(3):
            bar.advance(1, None, passed=1)
        bar.note("a note")
    assert bar.done == 3


def test_work_that_fails_before_its_plan_adds_no_line_to_the_error(plain):
    """An error before the plan (a run id not found) stays the command's one line."""
    out = io.StringIO()
    with pytest.raises(ValueError):
        with progress("export", unit="records", stream=out, heartbeat=False):
            raise ValueError("no run 'nope'")
    assert out.getvalue() == ""


def test_a_run_label_with_control_characters_never_reaches_the_stream_raw(plain, monkeypatch):
    """Review cli-p2, item 4: a run's label (rft names each run's progress by it) went raw
    into the plain lines; it is shown as everywhere else (`clean`: ``\\x01``, no escape)."""
    out = io.StringIO()
    monkeypatch.setattr("sys.stderr", out)
    label = "rft\x01 \x1b]0;pwned\x07\x1b[31mred"
    with RunEvents("rft", named=True, heartbeat=False) as sink:
        sink({"event": "planned", "total": 1, "label": label})
        sink({"event": "committed", "job": "j1", "outcome": "pass"})
        sink({"event": "done"})
    said = out.getvalue()
    assert not [c for c in said if ord(c) < 0x20 and c != "\n"], repr(said)
    assert lines(out)[0] == "[rft\\x01 red] start: 1 episodes"
