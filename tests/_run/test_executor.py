"""The executor seam: the runner commits what any executor yields; the work pickles."""

from __future__ import annotations

import pickle
import threading
from collections.abc import Generator, Iterable

import pytest
from toy_env import ENV_ID

from gym import OraclePolicy
from gym._run._executor import EpisodeWork, Executor, Finished, Job, LocalExecutor
from gym._run._runner import RunConfig, plan, run
from gym._store import Store


@pytest.fixture
def store(tmp_path):
    s = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    yield s
    s.close()


class Backwards(Executor):
    """Runs the jobs one by one, last first, in a pickled copy of the work (as a remote worker would)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def run(self, jobs: Iterable[Job], work: EpisodeWork) -> Generator[Finished, None, None]:
        remote = pickle.loads(pickle.dumps(work))
        policy = remote.new_policy()
        for job in reversed(list(jobs)):
            self.seen.append(job.episode_id)
            yield remote(pickle.loads(pickle.dumps(job)), policy)


def test_the_runner_commits_what_its_executor_yields_in_any_order(store):
    config = RunConfig(envs=[ENV_ID], policy="oracle", k=2)
    executor = Backwards()
    state = run(config, store=store, policy_factory=OraclePolicy, executor=executor)
    planned = [j.episode_id for j in plan(config)]
    assert executor.seen == planned[::-1]
    assert (state.done, state.passed) == (4, 4)
    assert sorted(e.id for e in store.episodes(config.run_id)) == sorted(planned)


def test_episode_work_runs_a_job_from_data_alone():
    config = RunConfig(envs=[ENV_ID], policy="oracle", limit=1, max_steps=5)
    (job,) = plan(config)
    work = EpisodeWork(config.run_id, OraclePolicy, {"max_steps": 5}, max_attempts=2)
    copy = pickle.loads(pickle.dumps(work))
    assert copy == work
    finished = copy(job, copy.new_policy())
    assert finished.job == job and finished.attempts == 1
    assert finished.result.outcome == "pass" and finished.result.task_id == job.task.id


def test_closing_the_local_executor_early_starts_nothing_more(store):
    config = RunConfig(envs=[ENV_ID], policy="oracle", k=3)
    jobs = plan(config)
    started: list[str] = []

    class Counting(OraclePolicy):
        def start(self, task, env):
            started.append(task.id)
            super().start(task, env)

    work = EpisodeWork(config.run_id, Counting)
    finished = LocalExecutor(concurrency=1).run(jobs, work)
    first = next(finished)
    finished.close()
    assert first.job in jobs
    assert len(started) <= 2, "at most twice the concurrency was ever submitted"


def test_a_stopped_run_commits_what_finished_and_the_same_run_finishes_later(store):
    config = RunConfig(envs=[ENV_ID], policy="oracle", k=3)
    total = len(plan(config))
    stop, events = threading.Event(), []
    state = run(
        config,
        store=store,
        policy_factory=OraclePolicy,
        concurrency=1,
        stop=stop,
        events=events.append,
        progress=lambda s: stop.set(),  # stop once the first episode is committed
    )
    stored = {e.id for e in store.episodes(config.run_id)}
    assert state.stopped and 1 <= state.done < total and len(stored) == state.done
    assert {e["job"] for e in events if e["event"] == "committed"} == stored
    finished = {e["job"] for e in events if e["event"] == "finished"}
    assert finished == stored, "every episode that finished was committed"
    assert events[-1]["event"] == "stopped"
    rest = run(config, store=store, policy_factory=OraclePolicy, concurrency=1)
    assert not rest.stopped and rest.skipped == state.done and rest.done == total - state.done


class _GradingWork(EpisodeWork):
    """Work that enters grading at once and grades for a while, counting who grades at once
    and, as each grading ends, how many episodes the pools were told wait for a slot."""

    lock = threading.Lock()
    now = 0
    most = 0
    entered: list[float] = []
    queued: list[int] = []
    seconds = 0.05

    @classmethod
    def reset(cls, seconds: float) -> None:
        """Forget what earlier runs counted; grade for ``seconds`` from now on."""
        cls.now = cls.most = 0
        cls.entered.clear()
        cls.queued.clear()
        cls.seconds = seconds

    def __call__(self, job: Job, policy: object) -> Finished:  # type: ignore[override]
        import time

        from gym._core._phase import enter
        from gym._sandbox import default_sandboxes

        demand = default_sandboxes().pools.demand
        cls = type(self)
        with cls.lock:
            cls.entered.append(time.monotonic())
        enter("grading")  # waits here for a grading slot
        with cls.lock:
            cls.now += 1
            cls.most = max(cls.most, cls.now)
        time.sleep(cls.seconds)
        with cls.lock:
            cls.now -= 1
            cls.queued.append(demand.queued)
        return Finished(job, None, 1)  # type: ignore[arg-type]


def test_at_most_grading_slots_grade_at_once_and_grading_frees_the_acting_place_at_once():
    config = RunConfig(envs=[ENV_ID], policy="oracle", k=4)
    jobs = plan(config)
    work = _GradingWork(config.run_id, OraclePolicy)
    _GradingWork.reset(seconds=0.05)
    with LocalExecutor(4, grading_slots=2) as executor:
        finished = list(executor.run(jobs, work))
    assert len(finished) == len(jobs) == 8
    assert _GradingWork.most == 2
    # one acting at a time: the second episode starts as soon as the first enters grading
    # (not at the scheduler's next poll, 0.25 s later); the third waits for the first to
    # end (at most twice the limit in flight)
    _GradingWork.reset(seconds=1.0)
    with LocalExecutor(1, grading_slots=8) as executor:
        list(executor.run(jobs[:4], work))
    gaps = [b - a for a, b in zip(_GradingWork.entered, _GradingWork.entered[1:], strict=False)]
    assert gaps[0] < 0.15 and gaps[1] > 0.9, gaps


def test_the_pools_learn_how_many_episodes_wait_for_a_grading_slot():
    from gym._sandbox import default_sandboxes

    demand = default_sandboxes().pools.demand
    config = RunConfig(envs=[ENV_ID], policy="oracle", k=2)
    jobs = plan(config)
    work = _GradingWork(config.run_id, OraclePolicy)
    _GradingWork.reset(seconds=0.2)
    with LocalExecutor(4, grading_slots=1) as executor:
        finished = list(executor.run(jobs, work))
    assert len(finished) == 4
    # one slot: while the first grades the three others wait, then two, one, none
    assert _GradingWork.queued == [3, 2, 1, 0]
    assert demand.queued == 0, "the run is over: nobody waits"
