"""Progress of long work on stderr: a rich bar on a terminal, plain lines in a log.

Every command that takes long (run, validate, import, train, export, regrade, redteam)
reports the same way::

    with progress("run", total=40, skipped=3) as bar:
        bar.begin(job_id)                       # optional: an item went in flight
        bar.advance(1, job_id, **{"pass": 1})   # an item finished, counted by outcome

Counts read ``done/todo``: todo is the plan's total less what a resume skipped, and the
skipped items are shown as such. The rate and the ETA come from the items finished in
this process since the plan started, never from skipped ones; before the first item
finishes the ETA reads ``ETA --``.

On a terminal (stderr a tty): a rich progress bar. Elsewhere (a pipe, a file, CI): plain
lines, flushed at once: one at the start (what is planned), one per ``every`` items or
per `INTERVAL_S` seconds whichever comes first, a heartbeat every `INTERVAL_S` while no
item finishes (``still running: 2 in flight, oldest 95 s``, so a log never goes silent
during a long item), and one at the end::

    [run] start: 37 episodes (3 skipped: done before)
    [run] 12/37 episodes (3 skipped) · 0.42/min · ETA 59 min · pass 7 fail 4 infra 1
    [run] still running: 12/37 episodes · 1 in flight, oldest 95 s · ETA 58 min
    [run] finished: 37/37 episodes in 88 min · 0.42/min · pass 30 fail 6 infra 1

``GYM_PROGRESS=plain`` (or ``rich``, ``off``) forces a mode, ``GYM_PROGRESS_INTERVAL``
sets the seconds between plain lines. The progress goes to stderr: stdout stays the
command's output.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import IO, Any, Literal

from gym._core._text import clean

__all__ = ["INTERVAL_S", "Progress", "RunEvents", "progress", "progress_mode"]

INTERVAL_S = 30.0
"""Seconds between plain lines when items are slow (and between heartbeats)."""

Mode = Literal["rich", "plain", "off"]
Clock = Callable[[], float]


def progress_mode(stream: IO[str] | None = None) -> Mode:
    """``$GYM_PROGRESS`` when set (rich, plain, off); else rich on a terminal, plain elsewhere."""
    forced = os.environ.get("GYM_PROGRESS", "").strip().lower()
    if forced in ("rich", "plain", "off"):
        return forced  # type: ignore[return-value]  # one of the Mode literals
    stream = stream or sys.stderr
    return "rich" if stream.isatty() else "plain"


class Progress:
    """Where a piece of long work stands: counts, items in flight, rate and ETA.

    This base class keeps the figures and writes nothing (``GYM_PROGRESS=off``); the
    subclasses show them. Its methods are safe to call from any thread.
    """

    def __init__(
        self, label: str, unit: str = "episodes", *, clock: Clock = time.monotonic
    ) -> None:
        self.label = label
        self.unit = unit
        self.clock = clock
        self.total: int | None = None
        """Items in the plan (None: not known yet)."""
        self.skipped = 0
        """Items of the plan done before (a resume): never counted in the rate."""
        self.done = 0
        """Items finished in this process."""
        self.counts: dict[str, int] = {}
        """Finished items by kind (``pass``, ``fail``, ``infra``...)."""
        self.flight: dict[str, float] = {}
        """Items in flight and when each began."""
        self.started = clock()
        self.last_done_at = self.started
        self.lock = threading.RLock()

    # -- what the work reports ------------------------------------------------------------

    def plan(self, total: int, skipped: int = 0) -> None:
        """The plan is known: ``total`` items, ``skipped`` of them done before (a resume)."""
        with self.lock:
            self.total, self.skipped = total, skipped
            self.started = self.last_done_at = self.clock()
        self.on_plan()

    def skip(self, n: int = 1) -> None:
        """``n`` planned items turned out done before (a resume): out of the rate."""
        with self.lock:
            self.skipped += n
        self.on_change(0)

    def begin(self, key: str) -> None:
        """An item went in flight (the heartbeat says how long the oldest has been)."""
        with self.lock:
            self.flight[key] = self.clock()
        self.on_change(0)

    def advance(self, n: int = 1, key: str | None = None, /, **counts: int) -> None:
        """``n`` items finished (``key``: the one `begin` named); ``counts`` by kind."""
        with self.lock:
            self.done += n
            self.last_done_at = self.clock()
            if key is not None:
                self.flight.pop(key, None)
            for name, value in counts.items():
                self.counts[name] = self.counts.get(name, 0) + value
        self.on_change(n)

    def note(self, text: Any) -> None:
        """A line for people (a rich `Text` or a string), shown above the progress."""

    def to(self, done: int, total: int) -> None:
        """Take a ``(done, total)`` callback's figures (the plan on its first call)."""
        if self.total is None:
            self.plan(total)
        if done > self.done:
            self.advance(done - self.done)

    # -- what is shown --------------------------------------------------------------------

    @property
    def todo(self) -> int | None:
        """Items to do in this process: the plan less what was skipped."""
        return None if self.total is None else max(0, self.total - self.skipped)

    def rate(self) -> float | None:
        """Items per second finished in this process since the plan; None before the first."""
        with self.lock:
            if not self.done:
                return None
            return self.done / max(self.clock() - self.started, 1e-9)

    def eta(self) -> float | None:
        """Seconds left at the rate so far; None before the first item (or with no plan)."""
        rate, todo = self.rate(), self.todo
        if rate is None or todo is None:
            return None
        return max(0, todo - self.done) / rate

    def count(self) -> str:
        """``12/37 episodes (3 skipped)``."""
        todo = self.todo
        of = "" if todo is None else f"/{todo}"
        skipped = f" ({self.skipped} skipped)" if self.skipped else ""
        return f"{self.done}{of} {self.unit}{skipped}"

    def stats(self) -> str:
        """Rate, ETA and counts by kind: ``0.42/min · ETA 14 min · pass 7 fail 4``."""
        parts = [_rate(self.rate()), f"ETA {_eta(self.eta())}"]
        with self.lock:
            kinds = " ".join(f"{k} {v}" for k, v in self.counts.items())
        return " · ".join(p for p in [*parts, kinds] if p)

    def line(self) -> str:
        """``12/37 episodes (3 skipped) · 0.42/min · ETA 14 min · pass 7 fail 4 infra 1``."""
        return f"{self.count()} · {self.stats()}"

    def still(self) -> str:
        """The heartbeat: ``still running: 12/37 episodes · 2 in flight, oldest 95 s · ETA ..``."""
        now = self.clock()
        with self.lock:
            oldest = min(self.flight.values(), default=None)
            n = len(self.flight)
            since = now - self.last_done_at
        if oldest is not None:
            what = f"{n} in flight, oldest {_duration(now - oldest)}"
        elif self.done:
            what = f"last one finished {_duration(since)} ago"
        else:
            what = f"running for {_duration(since)}"
        return f"still running: {self.count()} · {what} · ETA {_eta(self.eta())}"

    def start_line(self) -> str:
        """``start: 37 episodes (3 skipped: done before)``."""
        skipped = f" ({self.skipped} skipped: done before)" if self.skipped else ""
        return f"start: {self.todo} {self.unit}{skipped}"

    def end_line(self, how: str) -> str:
        """``finished: 37/37 episodes in 88 min · 0.42/min · pass 30 fail 6 infra 1``."""
        took = _duration(self.clock() - self.started)
        with self.lock:
            kinds = " ".join(f"{k} {v}" for k, v in self.counts.items())
        tail = " · ".join(p for p in (_rate(self.rate()), kinds) if p)
        return f"{how}: {self.count()} in {took}" + (f" · {tail}" if tail else "")

    def started_work(self) -> bool:
        """Whether the work got as far as its plan.

        Work that did not says nothing at its end: an error before the plan (a run id not
        found) stays the command's one line.
        """
        return self.total is not None or self.done > 0

    def outcome(self, exc: BaseException | None) -> str:
        """How the work ended: finished, stopped (a signal, or before its end) or failed."""
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            return "stopped"
        if exc is not None:
            return "failed"
        todo = self.todo
        return "stopped" if todo is not None and self.done < todo else "finished"

    # -- hooks of the subclasses ----------------------------------------------------------

    def on_plan(self) -> None:
        """The plan became known."""

    def on_change(self, finished: int) -> None:
        """Figures changed; ``finished`` items just finished."""

    def open(self) -> None:
        """The work starts."""

    def close(self, exc: BaseException | None) -> None:
        """The work ended (``exc``: the exception that ended it)."""


class _Plain(Progress):
    """Plain lines on a stream: start, every N items or 30 s, heartbeats, end."""

    def __init__(
        self,
        label: str,
        unit: str,
        *,
        stream: IO[str],
        every: int | None,
        interval: float,
        heartbeat: bool,
        clock: Clock,
    ) -> None:
        super().__init__(label, unit, clock=clock)
        self.stream: IO[str] | None = stream
        self.every = every
        self.interval = interval
        self.heartbeat = heartbeat
        self.last_line_at = self.started
        self.done_at_line = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def write(self, text: str) -> None:
        """One line, flushed (a log follows the work as it goes)."""
        with self.lock:
            self._put(f"[{self.label}] {text}\n")
            self.last_line_at = self.clock()
            self.done_at_line = self.done

    def _put(self, line: str) -> None:
        """Write and flush a line; a stream closed by its reader (``| head``) is let go.

        Progress is for people: the work goes on without it (a broken pipe failed a run
        whose episodes were all stored).
        """
        if self.stream is None:
            return
        try:
            self.stream.write(clean(line))  # a label or job id: never a raw control character
            self.stream.flush()
        except (BrokenPipeError, ValueError):  # ValueError: the stream was closed
            self.stream = None

    def step(self) -> int:
        """Items between two lines: ``every``, else a twentieth of the plan (at least 1)."""
        if self.every:
            return self.every
        return max(1, (self.todo or 0) // 20)

    def on_plan(self) -> None:
        self.write(self.start_line())

    def on_change(self, finished: int) -> None:
        if not finished:
            return
        with self.lock:
            due = self.done - self.done_at_line >= self.step()
            late = self.clock() - self.last_line_at >= self.interval
            if due or late:
                self.write(self.line())

    def tick(self) -> None:
        """A line when none was written for `interval` s: the figures, or a heartbeat."""
        with self.lock:
            if self.clock() - self.last_line_at < self.interval:
                return
            self.write(self.line() if self.done > self.done_at_line else self.still())

    def note(self, text: Any) -> None:
        with self.lock:
            self._put(f"{getattr(text, 'plain', text)}\n")

    def open(self) -> None:
        if self.total is not None:
            self.on_plan()
        if self.heartbeat:
            self._thread = threading.Thread(target=self._beat, name="gym-progress", daemon=True)
            self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(min(self.interval, 5.0)):
            self.tick()

    def close(self, exc: BaseException | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1)
        if self.started_work():
            self.write(self.end_line(self.outcome(exc)))


class _Rich(Progress):
    """A rich progress bar: label, bar, counts, rate, ETA and counts by kind."""

    def __init__(self, label: str, unit: str, *, console: Any, clock: Clock) -> None:
        super().__init__(label, unit, clock=clock)
        self.bar = _rich_bar(self, console)
        self.task = self.bar.add_task(label, total=None)

    def on_plan(self) -> None:
        self.bar.update(self.task, total=self.todo, completed=self.done)

    def on_change(self, finished: int) -> None:
        self.bar.update(self.task, total=self.todo, completed=self.done)

    def note(self, text: Any) -> None:
        self.bar.console.print(text, markup=False, highlight=False)

    def open(self) -> None:
        self.bar.start()
        self.on_plan()

    def close(self, exc: BaseException | None) -> None:
        self.bar.stop()
        if self.started_work():
            line = f"[{self.label}] {self.end_line(self.outcome(exc))}"
            self.bar.console.print(line, markup=False, highlight=False, soft_wrap=True)


def _rich_bar(tracker: Progress, console: Any) -> Any:
    """A rich `Progress` whose text columns read ``tracker`` at each refresh."""
    from rich.console import Console
    from rich.progress import BarColumn, ProgressColumn, TimeElapsedColumn
    from rich.progress import Progress as Bar
    from rich.text import Text

    class _Figures(ProgressColumn):
        def render(self, task: Any) -> Text:
            return Text(f"{tracker.count()} · {tracker.stats()}")

    class _Label(ProgressColumn):
        def render(self, task: Any) -> Text:
            return Text(tracker.label)

    console = console or Console(stderr=True)
    columns = (_Label(), BarColumn(), _Figures(), TimeElapsedColumn())
    return Bar(*columns, console=console, transient=True)  # the end line stays instead


@contextlib.contextmanager
def progress(
    label: str,
    total: int | None = None,
    *,
    skipped: int = 0,
    unit: str = "episodes",
    every: int | None = None,
    interval: float | None = None,
    console: Any = None,
    stream: IO[str] | None = None,
    heartbeat: bool = True,
    clock: Clock = time.monotonic,
) -> Iterator[Progress]:
    """Show the progress of some long work on stderr while inside (see the module).

    Args:
        label: what the work is (``run``, ``validate``...), the prefix of plain lines.
        total: items in the plan; None: not known yet (call `Progress.plan` once it is).
        skipped: of them, items done before (a resume).
        unit: what an item is (``episodes``, ``tasks``, ``steps``...).
        every: plain mode: a line per this many items (by default a twentieth of the
            plan), besides one per ``interval`` seconds.
        interval: plain mode: seconds between lines, and between heartbeats (by default
            ``$GYM_PROGRESS_INTERVAL``, else `INTERVAL_S`).
        console: rich mode: the rich console to draw on (by default one on stderr).
        stream: plain mode: where lines go (by default stderr).
        heartbeat: plain mode: a thread writes a line when none came for ``interval`` s.
        clock: seconds, monotonic (tests pass a fake one).
    """
    out = stream or sys.stderr
    mode = progress_mode(out)
    bar: Progress
    if mode == "rich":
        bar = _Rich(label, unit, console=console, clock=clock)
    elif mode == "plain":
        interval = interval or _interval()
        bar = _Plain(
            label,
            unit,
            stream=out,
            every=every,
            interval=interval,
            heartbeat=heartbeat,
            clock=clock,
        )
    else:
        bar = Progress(label, unit, clock=clock)
    if total is not None:
        bar.total, bar.skipped = total, skipped
    bar.open()
    try:
        yield bar
    except BaseException as exc:
        bar.close(exc)
        raise
    bar.close(None)


class RunEvents:
    """A run's event sink (`gym._run._runner.run`, its executor) that shows the run's progress.

    ``planned`` opens a progress of the run's episodes (the plan, less those committed
    before), ``scheduled`` puts an episode in flight, ``committed`` counts it by outcome,
    ``done`` or ``stopped`` closes it: one progress per run, so a command that runs
    several (rft's collections and evaluations) shows each, under the run's label when
    ``named``. Every event also goes on to ``also`` (the ``--events`` log); ``options``
    go to `progress`.

    Use it as a context manager: a run ended by an exception closes its progress with it.
    """

    def __init__(
        self,
        label: str,
        also: Callable[[dict[str, Any]], None] | None = None,
        *,
        named: bool = False,
        **options: Any,
    ) -> None:
        self.label = label
        self.also = also
        self.named = named
        self.options = options
        self.bar: Progress | None = None
        self._stack = contextlib.ExitStack()
        self._lock = threading.Lock()

    def __call__(self, event: dict[str, Any]) -> None:
        """Take one event (from any thread): ``also`` first, then the progress."""
        if self.also is not None:
            self.also(event)
        with self._lock:
            self._take(event)

    def _take(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "planned":
            self._close(None)
            label = str(event.get("label") or self.label) if self.named else self.label
            self.bar = self._stack.enter_context(progress(label, **self.options))
            self.bar.plan(int(event["total"]), int(event.get("skipped", 0)))
        elif self.bar is None:
            return
        elif kind == "scheduled":
            self.bar.begin(str(event["job"]))
        elif kind == "committed":
            outcome = {"infra_error": "infra"}.get(event["outcome"], event["outcome"])
            self.bar.advance(1, str(event["job"]), **{outcome: 1})
        elif kind == "stopping":
            self.bar.note(_stopping(event))
        elif kind in ("done", "stopped"):
            if event.get("abandoned"):
                self.bar.note(
                    f"{event['abandoned']} in flight abandoned, not committed: "
                    "the same command runs them again"
                )
            self._close(None)

    def _close(self, exc: BaseException | None) -> None:
        if self.bar is None:
            return
        self.bar = None
        if exc is None:
            self._stack.close()
        else:
            self._stack.__exit__(type(exc), exc, exc.__traceback__)
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> RunEvents:
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        with self._lock:
            self._close(exc)


def _interval() -> float:
    """``$GYM_PROGRESS_INTERVAL`` when it is a positive number of seconds, else `INTERVAL_S`."""
    try:
        value = float(os.environ.get("GYM_PROGRESS_INTERVAL", ""))
    except ValueError:
        return INTERVAL_S
    return value if value > 0 else INTERVAL_S


def _rate(per_s: float | None) -> str:
    """``250/s``, ``2.5/s``, ``12/min``, ``4.2/min`` or ``0.42/min``; empty before the first."""
    if per_s is None:
        return ""
    if per_s >= 100:
        return f"{per_s:.0f}/s"
    if per_s >= 1:
        return f"{per_s:.1f}/s"
    per_min = per_s * 60
    digits = 0 if per_min >= 10 else 1 if per_min >= 1 else 2
    return f"{per_min:.{digits}f}/min"


def _eta(seconds: float | None) -> str:
    return "--" if seconds is None else _duration(seconds)


def _duration(seconds: float) -> str:
    """``45 s``, ``2 min 05 s``, ``14 min``, ``2 h 05 min``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 600:
        minutes, rest = divmod(round(seconds), 60)
        return f"{minutes} min {rest:02d} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    hours, minutes = divmod(round(seconds / 60), 60)
    return f"{hours} h {minutes:02d} min"


def _stopping(event: dict[str, Any]) -> str:
    """What a stop does: the episodes not started are dropped, those in flight get a grace."""
    left, flying = event.get("not_started", 0), event.get("in_flight")
    if flying is None:  # an executor that does not say
        return f"stopping: {left} not started; finishing those in flight"
    grace = float(event.get("grace", 0))
    return (
        f"stopping: {left} not started; {flying} in flight get {grace:g} s to finish, "
        "then are abandoned (Ctrl-C again leaves now)"
    )
