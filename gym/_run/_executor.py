"""Executors: where a run's episodes run, and the work one episode is.

The runner plans jobs and commits each finished episode to the store; an `Executor`
runs the jobs in between and yields each one as it finishes. `EpisodeWork` says how to
run one job as plain data (run id, environment options, a picklable policy factory), so
an executor may run it in a thread of this process (`LocalExecutor`), in another process
or on another machine: the worker builds the environment and the policy itself.

The work also names the run's sandbox provider (`EpisodeWork.sandboxes`; None: the
default one of the process it runs in). The executor talks to the provider only through
its methods: the episodes still to come and the gradings waiting (`expect`), the limit
(`resize`), the engine's load (`latency`).
"""

from __future__ import annotations

import abc
import collections
import contextlib
import os
import queue
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

from pydantic import BaseModel

from gym._core._models import Task
from gym._core._phase import watch as watch_phases
from gym._envs._env import default_sandboxes
from gym._envs._registry import make
from gym._envs._users import User
from gym._policy import POLICIES, Policy, policy_from_name
from gym._policy._user import SimulatedUser
from gym._run._concurrency import HostProbe, Limiter
from gym._run._rollout import EpisodeResult, run_episode
from gym._sandbox import SandboxProvider

__all__ = [
    "EpisodeWork",
    "Event",
    "Executor",
    "Finished",
    "Job",
    "LocalExecutor",
    "NamedPolicy",
]


class Job(BaseModel):
    """One planned episode."""

    env_id: str
    task: Task
    sample_index: int
    seed: int
    episode_id: str


class Finished(NamedTuple):
    """A job that ran to its end: its result and how many runs it took."""

    job: Job
    result: EpisodeResult
    attempts: int


@dataclass(frozen=True)
class NamedPolicy:
    """A policy factory from a policy's name and parameters: plain data, so it pickles.

    Attributes:
        name: a name of `gym.policies.POLICIES` (oracle, noop, openai, local...) or
            ``replay``.
        params: the policy's constructor arguments (for replay: ``source`` and ``db``).
    """

    name: str
    params: dict[str, Any] = field(default_factory=dict)

    def __call__(self) -> Policy:
        """A new policy.

        Raises:
            ConfigError: unknown name, or options the policy does not take.
        """
        if self.name == "replay":
            from gym._run._replay import ReplayPolicy

            return ReplayPolicy(self.params["source"], db=self.params.get("db"))
        return policy_from_name(self.name, **self.params)

    def check_plan(self, jobs: list[Job]) -> None:
        """Refuse a plan the policy cannot play, before a run stores anything.

        Only replay can refuse one: a task its replayed run has no episode of.

        Raises:
            ConfigError: the plan holds such a task.
        """
        if self.name != "replay":
            return
        from gym._run._replay import ReplayPolicy

        policy = self()
        try:
            assert isinstance(policy, ReplayPolicy)
            policy.check_plan([(job.env_id, job.task.id) for job in jobs])
        finally:
            policy.close()

    def check(self) -> None:
        """Reach what the policy needs (a model server) before a run stores anything.

        Only a policy with something to reach (`Policy.check` of its own: openai) is
        made for it; the others (a local model's load) are left to the workers.

        Raises:
            ConfigError: unknown name, bad options, or a model the server does not serve.
            PolicyError: nothing answers at the policy's base URL.
        """
        cls = POLICIES.get(self.name)
        if cls is None or cls.check is Policy.check:
            return
        policy = self()
        try:
            policy.check()
        finally:
            policy.close()


@dataclass(frozen=True)
class EpisodeWork:
    """How to run one job, as data: picklable when its policy factory is.

    Attributes:
        run_id: the run the episodes belong to (a label on their containers).
        policy_factory: builds a policy; called once per worker (thread or process).
        env_kwargs: keyword arguments for `make` (for example ``max_steps``).
        max_attempts: runs of an episode that ends in infra_error before it is
            returned as such.
        sandboxes: where the episodes' sandboxes come from; None: the default
            provider of the process the work runs in. It must pickle for an executor
            that runs episodes in other processes (`DockerSandboxes` arrives there as a
            fresh provider with the same settings).
        episodes_per_job: episodes one job plays, one after another (1; validation
            plays a task's every check in one job): the provider hears the episodes
            still to come as the jobs not started times this, plus the rest of those
            in flight.
        user_factory: builds the user of each episode (`gym.policies.NamedUser` from
            ``gym run --user``); None: the environment's default (the scripted turns).
    """

    run_id: str
    policy_factory: Callable[[], Policy]
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    max_attempts: int = 3
    sandboxes: SandboxProvider | None = None
    episodes_per_job: int = 1
    user_factory: Callable[[], User] | None = None

    def new_policy(self) -> Policy:
        """A policy for one worker."""
        return self.policy_factory()

    def provider(self) -> SandboxProvider:
        """The provider the episodes run on, in this process."""
        return self.sandboxes or default_sandboxes()

    def __call__(self, job: Job, policy: Policy) -> Finished:
        """Run a job with a worker's policy, rerunning it while it ends in infra_error."""
        kwargs = dict(self.env_kwargs)
        if self.sandboxes is not None:
            kwargs["sandboxes"] = self.sandboxes
        # The job's own user (its reset starts it again on each attempt), closed after.
        user = self.user_factory() if self.user_factory is not None else None
        if user is not None:
            kwargs["user"] = user
        with contextlib.ExitStack() as done:
            if isinstance(user, SimulatedUser):
                done.callback(user.close)
            for attempt in range(1, self.max_attempts + 1):
                # The job holds its task: no reloading and re-hashing the whole task set.
                env = make(job.env_id, run=self.run_id, tasks=[job.task], **kwargs)
                result = run_episode(env, policy, task_id=job.task.id, seed=job.seed)
                if result.outcome != "infra_error" or attempt >= self.max_attempts:
                    return Finished(job, result, attempt)
        raise AssertionError("unreachable")


class Executor(abc.ABC):
    """Runs a run's jobs somewhere and hands each one back as it finishes."""

    stopped: bool = False
    """The last run was stopped before its end (its remaining jobs were not run)."""

    @abc.abstractmethod
    def run(self, jobs: Iterable[Job], work: EpisodeWork) -> Generator[Finished, None, None]:
        """Run every job with ``work``; yield each as it finishes, in any order.

        Every job is yielded exactly once. Closing the generator early (the caller
        stopped) starts no further job and releases the workers.
        """

    def close(self) -> None:  # noqa: B027 - optional hook: most executors hold nothing
        """Release what the executor holds across runs (nothing by default)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalExecutor(Executor):
    """Episodes in threads of this process, as many acting at once as a `Limiter` allows.

    Each finished episode is yielded at once, so the runner commits it at once. An
    episode that enters grading frees its place for the next one at once (grading
    overlaps the next episode's start); at most twice the limit are in flight, and at
    most ``grading_slots`` grade at once (grading is CPU work on this machine: more at
    once than there are CPUs only slows each down). Policies are built by
    the work's factory when none is free, and reused by later episodes one at a time.
    The work's sandbox provider hears the limit and the episodes still to start (its
    warm pools follow them), and its engine latency feeds an adaptive limit.

    Stopping (``stop`` set, for example by a signal handler, or Ctrl-C): no episode
    starts any more; those in flight get ``grace`` seconds, every one that finished is
    yielded, the others are abandoned (their threads are daemons, their results dropped;
    their containers leave with this process). After a Ctrl-C, `run` raises
    KeyboardInterrupt once it has yielded what finished. Closing the generator early
    also starts nothing more and abandons what is in flight.

    Args:
        concurrency: episodes acting at once; None adapts it to the machine (see
            `gym._run._concurrency.Limiter`).
        limiter: the limit to use instead of one made from ``concurrency``.
        stop: set it to stop the run (it stays set: later runs stop at once).
        grace: seconds the episodes in flight get to finish after a stop.
        events: receives ``scheduled``, ``finished`` and ``stopping`` events.
        grading_slots: episodes graded at once; by default the CPUs this process may use.
    """

    def __init__(
        self,
        concurrency: int | None = 2,
        *,
        limiter: Limiter | None = None,
        stop: threading.Event | None = None,
        grace: float = 3.0,
        events: Callable[[Event], None] | None = None,
        grading_slots: int | None = None,
    ) -> None:
        self._sandboxes: SandboxProvider | None = None
        """The provider of the run going on (or of the last one)."""
        self.limiter = limiter or Limiter(
            None if concurrency is None else max(1, concurrency),
            probe=HostProbe(self._engine_latency),
        )
        slots = grading_slots or len(os.sched_getaffinity(0))
        self.grading = threading.BoundedSemaphore(max(1, slots))
        self.stop = stop or threading.Event()
        self.grace = grace
        self._events = events or _ignore
        self.abandoned = 0
        """Episodes left unfinished by the last run (stopped or closed early)."""

    @property
    def concurrency(self) -> int:
        """The current limit of episodes acting at once."""
        return self.limiter.value

    def _engine_latency(self) -> float | None:
        return self._sandboxes.latency() if self._sandboxes is not None else None

    def run(self, jobs: Iterable[Job], work: EpisodeWork) -> Generator[Finished, None, None]:
        """Run the jobs in threads; yield each as it finishes (see the class docstring)."""
        sandboxes = self._sandboxes = work.provider()
        todo, policies = collections.deque(jobs), _Policies(work.new_policy)
        per_job = work.episodes_per_job
        flight = _Flight(self, todo, policies, sandboxes, per_job=per_job)
        self.stopped = False
        interrupted = False
        try:
            while (item := flight.next_result(work)) is not _END:
                if item is _INTERRUPTED:
                    interrupted = True
                elif item is not None:
                    yield _unwrap(item)
            yield from (_unwrap(item) for item in flight.drain())
        finally:
            self.abandoned = flight.close()
            # no spare is started for episodes that will not come
            sandboxes.expect(episodes=0, gradings=0)
        if interrupted:
            raise KeyboardInterrupt


Event = dict[str, Any]
"""One line of a run's event stream (``{"event": ..., "t": unix time, ...}``)."""

_Item = tuple[bool, Any]
"""A finished job: (True, its `Finished`) or (False, the exception it raised)."""

_END = object()
_INTERRUPTED = object()
_WAKE = object()  # an episode entered grading: the scheduler may admit the next one


def _ignore(event: Event) -> None:
    """An event sink that drops everything."""


def _unwrap(item: _Item) -> Finished:
    ok, value = item
    if not ok:
        raise value
    return cast(Finished, value)


class _Policies:
    """Policies reused by episodes one at a time, made when none is free."""

    def __init__(self, factory: Callable[[], Policy]) -> None:
        self._factory = factory
        self._free: list[Policy] = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def one(self) -> Iterator[Policy]:
        """A free policy (a new one if none is) for the time of one episode."""
        with self._lock:
            policy = self._free.pop() if self._free else None
        policy = policy or self._factory()
        try:
            yield policy
        finally:
            with self._lock:
                self._free.append(policy)


class _Flight:
    """One run of a `LocalExecutor`: the jobs to start, those in flight, those finished."""

    def __init__(
        self,
        owner: LocalExecutor,
        todo: collections.deque[Job],
        policies: _Policies,
        sandboxes: SandboxProvider,
        *,
        per_job: int = 1,
    ) -> None:
        self.owner = owner
        self.todo = todo
        self.policies = policies
        self.sandboxes = sandboxes
        self.per_job = max(1, per_job)
        self.acting = 0
        self.in_flight = 0
        self.queued = 0
        self.stopped = False
        self.closed = False
        self.deadline = 0.0
        self.pool_size = 0
        self.lock = threading.Lock()
        self.done: queue.Queue[Any] = queue.Queue()  # finished items, and _WAKE
        self.follow_pools()

    def next_result(self, work: EpisodeWork) -> Any:
        """Start what the limit allows, then wait a moment for a result.

        Returns:
            A finished item, None (nothing yet), `_END` (nothing more will come but
            what `drain` returns) or `_INTERRUPTED` (Ctrl-C: the run now stops).
        """
        try:
            return self._step(work)
        except KeyboardInterrupt:
            self.owner.stop.set()
            return _INTERRUPTED

    def _step(self, work: EpisodeWork) -> Any:
        if self.owner.stop.is_set() and not self.stopped:
            self._stopping()
        self._admit(work)
        with self.lock:
            idle = self.in_flight == 0
        if (idle and not self.todo) or (self.stopped and time.monotonic() > self.deadline):
            return _END
        try:
            item: Any = self.done.get(timeout=0.25)
        except queue.Empty:
            item = None
        if item is _WAKE:
            item = None
        waiting = bool(self.todo) and self.acting >= self.owner.limiter.value
        self.owner.limiter.update(waiting=waiting)
        self.follow_pools()
        return item

    def _stopping(self) -> None:
        self.stopped = self.owner.stopped = True
        self.deadline = time.monotonic() + self.owner.grace
        event = {
            "event": "stopping",
            "t": time.time(),
            "not_started": len(self.todo),
            "in_flight": self.in_flight,
            "grace": self.owner.grace,
        }
        self.owner._events(event)
        self.todo.clear()

    def follow_pools(self) -> None:
        """Tell the provider the limit and the episodes still to start (its warm pools)."""
        limit = self.owner.limiter.value
        if limit != self.pool_size:
            self.sandboxes.resize(limit)
            self.pool_size = limit
        self.sandboxes.expect(episodes=self.to_come())

    def to_come(self) -> int:
        """Episodes still to begin: the jobs not started, the rest of those in flight."""
        return len(self.todo) * self.per_job + self.in_flight * (self.per_job - 1)

    def _admit(self, work: EpisodeWork) -> None:
        limit = self.owner.limiter.value
        while self.todo:
            with self.lock:
                if self.acting >= limit or self.in_flight >= 2 * limit:
                    return
                self.acting += 1
                self.in_flight += 1
            job = self.todo.popleft()
            # before the episode opens: no double count
            self.sandboxes.expect(episodes=self.to_come())
            self.owner._events({"event": "scheduled", "job": job.episode_id, "t": time.time()})
            thread = threading.Thread(target=self._work, args=(job, work), daemon=True)
            thread.name = f"gym-ep-{job.episode_id[:8]}"
            thread.start()

    def _work(self, job: Job, work: EpisodeWork) -> None:
        acting, grading = [True], [False]

        def on_phase(name: str) -> None:
            if name != "grading":
                return
            if acting[0]:
                with self.lock:
                    self.acting -= 1
                acting[0] = False
                self.done.put(_WAKE)
            if not grading[0]:
                self._queue(1)
                try:
                    self.owner.grading.acquire()
                finally:
                    self._queue(-1)
                grading[0] = True

        with watch_phases(on_phase):
            try:
                with self.policies.one() as policy:
                    item: _Item = (True, work(job, policy))
            except BaseException as exc:  # re-raised where the results are read
                item = (False, exc)
            finally:
                if grading[0]:
                    self.owner.grading.release()
        self._finished(job, item, acting[0])

    def _queue(self, change: int) -> None:
        """Count an episode in or out of the queue for a grading slot; tell the provider."""
        with self.lock:
            self.queued += change
            self.sandboxes.expect(gradings=self.queued)

    def _finished(self, job: Job, item: _Item, acting: bool) -> None:
        with self.lock:
            self.acting -= acting
            self.in_flight -= 1
            if self.closed:
                return
            self.done.put(item)
            if item[0]:
                event = {"event": "finished", "job": job.episode_id, "t": time.time()}
                self.owner._events(event)

    def drain(self) -> list[_Item]:
        """Close the run to late results and take the finished ones not yet read."""
        with self.lock:
            self.closed = True
            items = []
            while not self.done.empty():
                item = self.done.get_nowait()
                if item is not _WAKE:
                    items.append(item)
        return items

    def close(self) -> int:
        """Close the run to late results; how many jobs are still in flight."""
        with self.lock:
            self.closed = True
            return self.in_flight
