"""Executors: where a run's episodes run, and the work one episode is.

The runner plans jobs and commits each finished episode to the store; an `Executor`
runs the jobs in between and yields each one as it finishes. `EpisodeWork` says how to
run one job as plain data (run id, environment options, a picklable policy factory), so
an executor may run it in a thread of this process (`LocalExecutor`), in another process
or on another machine: the worker builds the environment and the policy itself.
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pydantic import BaseModel

from gym._models import Task
from gym._policy import Policy, policy_from_name
from gym._registry import make
from gym._rollout import EpisodeResult, run_episode
from gym._sandbox import set_pool_size

__all__ = ["EpisodeWork", "Executor", "Finished", "Job", "LocalExecutor", "NamedPolicy"]


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
            from gym._replay import ReplayPolicy

            return ReplayPolicy(self.params["source"], db=self.params.get("db"))
        return policy_from_name(self.name, **self.params)


@dataclass(frozen=True)
class EpisodeWork:
    """How to run one job, as data: picklable when its policy factory is.

    Attributes:
        run_id: the run the episodes belong to (a label on their containers).
        policy_factory: builds a policy; called once per worker (thread or process).
        env_kwargs: keyword arguments for `make` (for example ``max_steps``).
        max_attempts: runs of an episode that ends in infra_error before it is
            returned as such.
    """

    run_id: str
    policy_factory: Callable[[], Policy]
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    max_attempts: int = 3

    def new_policy(self) -> Policy:
        """A policy for one worker."""
        return self.policy_factory()

    def __call__(self, job: Job, policy: Policy) -> Finished:
        """Run a job with a worker's policy, rerunning it while it ends in infra_error."""
        for attempt in range(1, self.max_attempts + 1):
            # The job holds its task: no reloading and re-hashing the whole task set.
            env = make(job.env_id, run=self.run_id, tasks=[job.task], **self.env_kwargs)
            result = run_episode(env, policy, task_id=job.task.id, seed=job.seed)
            if result.outcome != "infra_error" or attempt >= self.max_attempts:
                return Finished(job, result, attempt)
        raise AssertionError("unreachable")


class Executor(abc.ABC):
    """Runs a run's jobs somewhere and hands each one back as it finishes."""

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
    """Episodes in threads of this process, ``concurrency`` at a time.

    Each thread builds its policy once; at most twice the concurrency of jobs are
    submitted at a time, so a long run holds little in memory.
    """

    def __init__(self, concurrency: int = 2) -> None:
        self.concurrency = max(1, concurrency)

    def run(self, jobs: Iterable[Job], work: EpisodeWork) -> Generator[Finished, None, None]:
        """Run the jobs on a thread pool; yield each as it finishes."""
        set_pool_size(self.concurrency)
        local = threading.local()

        def one(job: Job) -> Finished:
            if not hasattr(local, "policy"):
                local.policy = work.new_policy()
            return work(job, local.policy)

        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="gym-ep") as pool:
            pending: set[Future[Finished]] = set()
            queue = iter(jobs)
            for job in queue:
                pending.add(pool.submit(one, job))
                if len(pending) >= 2 * self.concurrency:
                    break
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield future.result()
                    next_job = next(queue, None)
                    if next_job is not None:
                        pending.add(pool.submit(one, next_job))
