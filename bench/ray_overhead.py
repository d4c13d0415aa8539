"""Ray executor against local threads at equal CPUs: the same episodes, the same concurrency.

    .venv/bin/python bench/ray_overhead.py [--episodes 32] [--concurrency 2] [--nodes 2] [--repeats 3]

Starts a Ray cluster on this machine (a head and worker nodes, each its own `ray start`
process group) offering ``concurrency`` CPUs in all, then runs the same workload through
the real runner with `LocalExecutor(concurrency)` and with `RayExecutor(workers=
concurrency)`, interleaved (local, ray, local, ray...), each repeat a new run id and a
fresh SQLite store. The workload is graded episodes without tool calls (noop policy on
PyFunc-v0: an agent container, an export, a fresh grading container). The Ray workers are
started once and kept (as a trainer or a long evaluation keeps them); their start-up is
measured apart. Writes medians and their ratio to docs/benchmarks.md (target: Ray's
throughput at least 0.9x local, an overhead of at most 10%).
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import sys
import tempfile
import time
from pathlib import Path

from gym._envs._registry import tasks_of
from gym._run._ray import import_ray
from gym.runs import (
    EpisodeWork,
    Executor,
    Finished,
    LocalExecutor,
    LocalRayCluster,
    NamedPolicy,
    RayExecutor,
    RunConfig,
    Store,
    plan,
    run,
)

sys.path.insert(0, str(Path(__file__).parent))
from _report import machine, pct, write_section  # noqa: E402

ENV = "boxgym/PyFunc-v0"


def one_run(executor: Executor, episodes: int, seed: int) -> float:
    """Episodes per second of one whole run of about ``episodes`` noop episodes."""
    k = -(-episodes // len(tasks_of(ENV)))
    config = RunConfig(envs=[ENV], policy="noop", k=k, limit=-(-episodes // k), seed=seed)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"sqlite:///{tmp}/runs.db")
        start = time.monotonic()
        state = run(config, store=store, executor=executor)
        elapsed = time.monotonic() - start
        store.close()
    assert state.infra_error == 0 and state.done == state.failed, state
    return state.done / elapsed


class Echo:
    def back(self, payload: bytes) -> bytes:
        return payload


def warm_up(executor: RayExecutor, n: int) -> list[Finished]:
    """Start the workers: one noop episode each, straight through the executor (no store)."""
    config = RunConfig(envs=[ENV], policy="noop", limit=n, seed=-1)
    work = EpisodeWork(config.run_id, NamedPolicy("noop"))
    return list(executor.run(plan(config), work))


def round_trip_ms(payload: bytes, n: int = 50) -> list[float]:
    """Milliseconds of a call to another Ray worker process carrying ``payload`` there and back."""
    ray = import_ray()
    echo = ray.remote(num_cpus=0)(Echo).remote()
    ray.get(echo.back.remote(b""))
    out = []
    for _ in range(n):
        start = time.perf_counter()
        ray.get(echo.back.remote(payload))
        out.append((time.perf_counter() - start) * 1000)
    ray.kill(echo)
    return out


def overhead(ratio: float) -> str:
    if ratio >= 1:
        return f"no overhead measured (Ray {(ratio - 1) * 100:.1f}% faster)"
    return f"an overhead of {(1 - ratio) * 100:.1f}%"


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.1f} (1 min), {five:.1f} (5 min)"


def settle(limit: float = 120.0) -> None:
    """Wait (at most ``limit`` seconds) for the load of earlier work to leave the machine."""
    cores = len(os.sched_getaffinity(0))
    deadline = time.monotonic() + limit
    while os.getloadavg()[0] > cores and time.monotonic() < deadline:
        time.sleep(5)


def caution(rates: dict[str, list[float]], load_before: str) -> str:
    """A warning when the conclusion is not robust: other work ran on the machine when
    the measurement began, or single interleaved pairs disagree with the medians about
    the 10% target. (During the runs the load is the benchmark's own.)"""
    cores = len(os.sched_getaffinity(0))
    busy = float(load_before.split()[0])
    pairs = [r / q for r, q in zip(rates["ray"], rates["local"], strict=True)]
    median_met = statistics.median(rates["ray"]) / statistics.median(rates["local"]) >= 0.9
    disagree = any((p >= 0.9) != median_met for p in pairs)
    if busy <= cores and not disagree:
        return (
            f" Each interleaved pair agrees: Ray/local per pair {min(pairs):.3f}-{max(pairs):.3f}."
        )
    why = []
    if busy > cores:
        why.append(f"the machine was busy when it began (load average {busy:.1f} on {cores} cores)")
    if disagree:
        why.append(
            f"single interleaved pairs disagree with the medians (Ray/local per pair "
            f"{min(pairs):.3f}-{max(pairs):.3f})"
        )
    return f"\n\n**Not conclusive:** {' and '.join(why)}. Re-run the command on a quiet machine."


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    opts = parser.parse_args()
    cpus = [opts.concurrency / opts.nodes] * opts.nodes
    settle()
    load_before = load()
    with LocalRayCluster(cpus) as cluster:
        local = LocalExecutor(opts.concurrency)
        with RayExecutor(cluster.address, workers=opts.concurrency) as remote:
            start = time.monotonic()
            finished = warm_up(remote, opts.concurrency)
            ray_start = time.monotonic() - start
            payload = pickle.dumps(finished[0])
            trip = round_trip_ms(payload)
            one_run(local, opts.concurrency, seed=-2)  # the same warm-up for local threads
            rates: dict[str, list[float]] = {"local": [], "ray": []}
            for rep in range(opts.repeats):
                for name, executor in (("local", local), ("ray", remote)):
                    rates[name].append(one_run(executor, opts.episodes, seed=rep))
                    print(f"{name} #{rep}: {rates[name][-1]:.2f} episodes/s", flush=True)
            nodes = len({w.node_id for w in remote.workers})
    extra = {"start": ray_start, "bytes": len(payload), "p50": pct(trip, 50), "p99": pct(trip, 99)}
    write(opts, rates, extra, nodes, load_before, load())


def write(
    opts: argparse.Namespace,
    rates: dict[str, list[float]],
    extra: dict[str, float],
    nodes: int,
    load_before: str,
    load_after: str,
) -> None:
    med = {k: statistics.median(v) for k, v in rates.items()}
    ratio = med["ray"] / med["local"]
    shown = {k: ", ".join(f"{r:.2f}" for r in v) for k, v in rates.items()}
    command = (
        f".venv/bin/python bench/ray_overhead.py --episodes {opts.episodes} "
        f"--concurrency {opts.concurrency} --nodes {opts.nodes} --repeats {opts.repeats}"
    )
    body = f"""## Ray executor against local threads (equal CPUs, {opts.nodes} Ray nodes)

Command: `{command}`
Machine: {machine()}; load average {load_before} before, {load_after} after.

{opts.episodes} graded episodes without tool calls (noop policy, PyFunc-v0: agent container,
export, fresh grading container) per run, {opts.concurrency} at once: local threads against
{opts.concurrency} Ray workers on a cluster of {opts.nodes} nodes on this machine (separate
`ray start` processes, {opts.concurrency} CPUs in all; the workers ran on {nodes} nodes).
Interleaved local, ray, ...; medians of {opts.repeats}; a new run id and store each time.

| executor | episodes/s (median) | runs |
|---|---|---|
| local threads | {med["local"]:.2f} | {shown["local"]} |
| Ray workers | {med["ray"]:.2f} | {shown["ray"]} |

Ray's throughput is **{ratio:.3f}x** local's: {overhead(ratio)} (target: an overhead of
at most 10%, 0.9x): {"met" if ratio >= 0.9 else "NOT met"}.{caution(rates, load_before)}

- Per episode, Ray adds one call to a worker process and back: with a pickled result of
  {extra["bytes"] / 1024:.1f} KiB (a noop episode), {extra["p50"]:.2f} ms p50,
  {extra["p99"]:.2f} ms p99 (50 calls, same cluster).
- Per executor, starting the workers (and their first episode each) took
  {extra["start"]:.1f} s, once; it is not counted above (the workers stay up between runs).
"""
    write_section("ray-overhead" if opts.nodes == 2 else f"ray-overhead-{opts.nodes}-nodes", body)
    print(body)


if __name__ == "__main__":
    main()
