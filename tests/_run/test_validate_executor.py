"""Validation on the executor: one job per task, the task's place held, lost jobs not kept."""

from __future__ import annotations

import pickle
import threading
import time
from collections.abc import Generator, Iterable

from toy_env import ENV_ID

from gym._run import _validate
from gym._run._executor import EpisodeWork, Executor, Finished, Job, LocalExecutor
from gym._run._rollout import EpisodeResult
from gym._store import Store
from gym.runs import validate_env
from gym.sandbox import LocalSandboxes


class Remote(Executor):
    """Runs each job in a pickled copy of the work, as a worker in another process would."""

    def __init__(self) -> None:
        self.jobs: list[Job] = []
        self.works: list[EpisodeWork] = []

    def run(self, jobs: Iterable[Job], work: EpisodeWork) -> Generator[Finished, None, None]:
        remote = pickle.loads(pickle.dumps(work))
        self.works.append(remote)
        for job in jobs:
            self.jobs.append(job)
            yield remote(pickle.loads(pickle.dumps(job)), remote.new_policy())


def test_the_tasks_run_as_jobs_of_the_executor_given():
    executor = Remote()
    checks = validate_env(ENV_ID, repeats=2, executor=executor)
    assert [j.task.id for j in executor.jobs] == ["add", "greet"]
    assert {j.env_id for j in executor.jobs} == {ENV_ID}
    (work,) = executor.works
    assert isinstance(work, _validate.TaskWork) and work.repeats == 2
    assert work.episodes_per_job == 4  # two oracle runs, noop, the perturbed oracle
    assert [c.task_id for c in checks] == ["add", "greet"] and all(c.ok for c in checks)
    assert all(c.oracle == ["pass", "pass"] for c in checks)


class Losing(Executor):
    """Loses every job, as the Ray executor reports a worker that died."""

    def run(self, jobs: Iterable[Job], work: EpisodeWork) -> Generator[Finished, None, None]:
        for job in jobs:
            lost = EpisodeResult(
                env_id=job.env_id,
                task_id=job.task.id,
                outcome="infra_error",
                end_reason="worker lost twice",
            )
            yield Finished(job, lost, 2)


def test_a_lost_job_is_not_validated_and_not_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(_validate, "code_hash", lambda env_id: "code")
    store = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    (check,) = validate_env(ENV_ID, tasks=["add"], executor=Losing(), store=store)
    assert not check.ok and check.infra
    assert check.problems == ["infra_error: validation stopped: worker lost twice"]
    (again,) = validate_env(ENV_ID, tasks=["add"], executor=Remote(), store=store)
    assert not again.resumed and again.ok


def test_a_task_holds_its_place_while_its_episodes_grade(monkeypatch):
    """-c 1 is one task at once, though each of its episodes enters grading."""
    lock, now, most = threading.Lock(), [0], [0]
    real = _validate.validate_task

    def counted(*args, **kwargs):
        with lock:
            now[0] += 1
            most[0] = max(most[0], now[0])
        try:
            time.sleep(0.3)  # time for the executor to admit another task if it would
            return real(*args, **kwargs)
        finally:
            with lock:
                now[0] -= 1

    monkeypatch.setattr(_validate, "validate_task", counted)
    checks = validate_env(ENV_ID, repeats=1, executor=LocalExecutor(1))
    assert all(c.ok for c in checks) and most[0] == 1


class Hearing(LocalSandboxes):
    """Local sandboxes that record what the executor tells them is still to come."""

    def __init__(self) -> None:
        super().__init__(allow_unsafe=True)
        self.heard: list[int] = []

    def expect(self, *, episodes: int | None = None, gradings: int | None = None) -> None:
        if episodes is not None:
            self.heard.append(episodes)


class Quick(EpisodeWork):
    """A job that plays nothing and ends at once."""

    def __call__(self, job: Job, policy: object) -> Finished:  # type: ignore[override]
        result = EpisodeResult(env_id=job.env_id, task_id=job.task.id, outcome="pass")
        return Finished(job, result, 1)


def _jobs(n: int) -> list[Job]:
    task = _validate.tasks_of(ENV_ID)[0]
    return [Job(env_id=ENV_ID, task=task, sample_index=i, seed=0, episode_id=f"{i:08}")
            for i in range(n)]  # fmt: skip


def test_the_provider_hears_every_episode_a_job_will_play():
    for per_job, first, second in ((1, 3, 2), (4, 12, 11)):
        provider = Hearing()
        work = Quick("r", object, sandboxes=provider, episodes_per_job=per_job)
        done = list(LocalExecutor(1).run(_jobs(3), work))
        assert len(done) == 3
        # before any job starts: every episode; then the first job started, its first
        # episode about to open: the rest of it and all of the two jobs left
        assert provider.heard[:2] == [first, second], provider.heard
        assert provider.heard[-1] == 0
