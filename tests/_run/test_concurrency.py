"""Concurrency on one machine: the adaptive limit and the local executor (no Docker)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from gym._core._models import Task
from gym._core._phase import enter
from gym._run._concurrency import Limiter, Sample
from gym._run._executor import Finished, Job, LocalExecutor
from gym._run._rollout import EpisodeResult
from gym._sandbox import SandboxProvider, default_sandboxes

CALM = Sample(cpu_busy=0.3, mem_available_mb=8000, mem_total_mb=16000, engine_latency_s=0.1)


def limiter(**kwargs) -> Limiter:
    return Limiter(start=2, cap=8, probe=lambda: CALM, interval=1.0, **kwargs)


def test_a_fixed_limit_never_moves():
    fixed = Limiter(3, probe=lambda: CALM)
    assert fixed.value == 3 and not fixed.adaptive
    assert fixed.update(waiting=True, now=time.monotonic() + 100) == 3


def test_the_limit_climbs_only_while_it_holds_work_back_and_the_machine_has_room():
    lim = limiter()
    assert lim.decide(CALM, waiting=True)[0] == 1
    assert lim.decide(CALM, waiting=False)[0] == 0, "nothing waits: no reason to climb"
    busy = CALM._replace(cpu_busy=0.97)
    assert lim.decide(busy, waiting=True)[0] == 0, "the CPU is used up: hold"


def test_the_limit_backs_off_when_memory_runs_short_or_the_engine_slows_down():
    lim = Limiter(start=8, cap=16, probe=lambda: CALM)
    short = CALM._replace(mem_available_mb=100)
    assert lim.decide(short, waiting=True) == (-2, "memory short")
    lim.decide(CALM, waiting=True)  # best engine latency seen: 0.1 s
    slow = CALM._replace(engine_latency_s=0.5)
    change, why = lim.decide(slow, waiting=True)
    assert change == -1 and "slower" in why


def test_update_reconsiders_once_per_interval_within_its_bounds():
    lim = limiter()
    now = time.monotonic()
    assert lim.update(waiting=True, now=now) == 2, "not before the first interval"
    values = [lim.update(waiting=True, now=now + 1.0 + i) for i in range(20)]
    assert values[0] == 3 and max(values) == 8, "one step a second, never past the cap"
    assert [v for _, v, _ in lim.history] == [3, 4, 5, 6, 7, 8]


def job(n: int) -> Job:
    task = Task(id=f"t{n}", family="toy", prompt="p")
    return Job(env_id="toy/Toy-v0", task=task, sample_index=0, seed=n, episode_id=str(n))


@dataclass
class Work:
    """Stands in for `EpisodeWork`: runs ``body(n)`` for job n (no environment)."""

    body: Callable[[int], None]
    policies: int = 0
    episodes_per_job: int = 1

    def new_policy(self) -> object:
        self.policies += 1
        return object()

    def provider(self) -> SandboxProvider:
        return default_sandboxes()

    def __call__(self, job: Job, policy: object) -> Finished:
        self.body(job.seed)
        result = EpisodeResult(env_id=job.env_id, task_id=job.task.id, outcome="pass")
        return Finished(job, result, 1)


def run_jobs(executor: LocalExecutor, numbers, body) -> list[int]:
    return [f.job.seed for f in executor.run([job(n) for n in numbers], Work(body))]


def test_the_executor_runs_every_job_never_more_at_once_than_the_limit():
    lock, running, peak = threading.Lock(), [0], [0]

    def body(n: int) -> None:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.02)
        with lock:
            running[0] -= 1

    work = Work(body)
    done = [f.job.seed for f in LocalExecutor(3).run([job(n) for n in range(12)], work)]
    assert sorted(done) == list(range(12)) and peak[0] == 3
    assert work.policies <= 3, "a policy is reused by later episodes, one at a time"


def test_an_episode_being_graded_lets_the_next_one_start():
    started, release = [], threading.Event()

    def body(n: int) -> None:
        started.append(n)
        if n == 0:
            enter("grading")  # the first one is graded while the second acts
            assert release.wait(5)
        else:
            release.set()

    assert sorted(run_jobs(LocalExecutor(1), [0, 1], body)) == [0, 1]
    assert started == [0, 1]


def test_a_stop_yields_what_finishes_in_the_grace_and_abandons_the_rest():
    stop = threading.Event()
    events: list[dict] = []

    def body(n: int) -> None:
        time.sleep({0: 0.1, 1: 0.5}.get(n, 30))  # 1 ends within the grace, 2 does not

    executor = LocalExecutor(3, stop=stop, grace=2.0, events=events.append)
    results = []
    for finished in executor.run([job(n) for n in range(10)], Work(body)):
        results.append(finished.job.seed)
        stop.set()
    assert sorted(results) == [0, 1]
    assert executor.stopped and executor.abandoned == 1
    scheduled = [e["job"] for e in events if e["event"] == "scheduled"]
    assert scheduled == ["0", "1", "2"], "nothing starts after the stop"
    finished = sorted(e["job"] for e in events if e["event"] == "finished")
    assert finished == ["0", "1"], "every job reported finished was yielded"


def test_the_executor_runs_again_after_a_run_that_ended():
    executor = LocalExecutor(2)
    assert sorted(run_jobs(executor, [0, 1], lambda n: None)) == [0, 1]
    assert sorted(run_jobs(executor, [2, 3, 4], lambda n: None)) == [2, 3, 4]
    assert not executor.stopped and executor.abandoned == 0


def test_the_pools_hear_of_an_episode_leaving_the_queue_before_it_starts():
    demand = default_sandboxes().pools.demand
    seen: dict[int, int | None] = {}
    run_jobs(LocalExecutor(1), range(6), lambda n: seen.setdefault(n, demand.pending))
    assert seen == {n: 5 - n for n in range(6)}, "no episode counted as both queued and open"
    assert demand.pending == 0, "at the end no more episodes are expected"


def test_a_failing_job_raises_where_the_results_are_read():
    def body(n: int) -> None:
        raise ValueError("broken job")

    with pytest.raises(ValueError, match="broken job"):
        run_jobs(LocalExecutor(2), [1], body)


def test_an_adaptive_executor_starts_at_the_core_count_or_less():
    executor = LocalExecutor(None)
    assert executor.limiter.adaptive and 1 <= executor.concurrency <= executor.limiter.cap
