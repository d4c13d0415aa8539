"""Concurrency on one machine: the adaptive limit and the local executor (no Docker)."""

from __future__ import annotations

import threading
import time

import pytest

from gym._concurrency import Limiter, LocalExecutor, Sample
from gym._phase import enter

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


def run_jobs(executor: LocalExecutor, jobs, work):
    return list(executor.run(jobs, work))


def test_the_executor_runs_every_job_never_more_at_once_than_the_limit():
    lock, running, peak = threading.Lock(), [0], [0]

    def work(job: int) -> int:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.02)
        with lock:
            running[0] -= 1
        return job * 2

    results = run_jobs(LocalExecutor(Limiter(3)), range(12), work)
    assert sorted(results) == [j * 2 for j in range(12)] and peak[0] == 3


def test_an_episode_being_graded_lets_the_next_one_start():
    started, release = [], threading.Event()

    def work(job: int) -> int:
        started.append(job)
        if job == 0:
            enter("grading")  # the first one is graded while the second acts
            assert release.wait(5)
        else:
            release.set()
        return job

    assert sorted(run_jobs(LocalExecutor(Limiter(1)), [0, 1], work)) == [0, 1]
    assert started == [0, 1]


def test_a_stop_yields_what_finishes_in_the_grace_and_abandons_the_rest():
    stop = threading.Event()
    events: list[dict] = []

    def work(job: int) -> int:
        time.sleep({0: 0.1, 1: 0.5}.get(job, 30))  # 1 ends within the grace, 2 does not
        return job

    executor = LocalExecutor(Limiter(3), stop=stop, grace=2.0, events=events.append)
    results = []
    for result in executor.run(range(10), work):
        results.append(result)
        stop.set()
    assert sorted(results) == [0, 1]
    assert executor.stopped and executor.abandoned == 1
    scheduled = [e["job"] for e in events if e["event"] == "scheduled"]
    assert scheduled == ["0", "1", "2"], "nothing starts after the stop"
    finished = sorted(e["job"] for e in events if e["event"] == "finished")
    assert finished == ["0", "1"], "every job reported finished was yielded"


def test_a_failing_job_raises_where_the_results_are_read():
    def work(job: int) -> int:
        raise ValueError("broken job")

    with pytest.raises(ValueError, match="broken job"):
        run_jobs(LocalExecutor(Limiter(2)), [1], work)
