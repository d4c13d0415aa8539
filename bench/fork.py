"""What `env.fork(k)` costs against a warm reset, and against replaying the prefix.

    python bench/fork.py [--reps 5] [--k 4] [--pool 5] [--task calc-precedence]

A PyRepo episode (``--task``) takes three steps (``cd`` and ``export``, a file appended
to, a file in /tmp), then forks. Measured in the same process, medians of ``--reps``:

- **warm reset**: `reset` plus the first command (``true``), with spare containers
  ready in the warm pool (a reset is lazy: its container is taken at the first command,
  so the first command is part of what a reset costs);
- **fork(1)**, **fork(k)**: the fork until every branch is ready (container taken,
  files and shell state copied): the mechanism `ContainerEnv.fork` uses; the last
  column is the cost per branch (x warm reset, over k);
- **replay(k)**: the other mechanism, k fresh episodes (`reset`) replaying the
  prefix's three actions, one after the other.

Before each measure (for a fork: after the parent's prefix, whose container was a
spare) the warm pool is full: ``--pool`` spares (k + 1 by default, so that
the parent and every branch take a ready container, as a reset does; ``--pool 1`` is the
default pool of a process that says nothing, where the branches start containers cold).
Prints a markdown table for docs/benchmarks.md. A benchmark, not a test: the figures
move with the machine's load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import gym

PREFIX = [
    "cd arith && export FORK_VAR=forty-two",
    "echo '# a note' >> errors.py",
    "echo scratch > /tmp/scratch.txt",
]


def _bash(command: str) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"command": command}}


def _timed(work: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = work()
    return time.perf_counter() - start, out


def _warm(env: gym.ContainerEnv, task: str) -> None:
    """Wait until the warm pool holds all its spares (at most a minute)."""
    pool = env.sandboxes.pool_for(env.sandbox_config())
    deadline = time.monotonic() + 60
    while (pool.deficit() > 0 or pool.filling) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(0.5)


def warm_reset(env: gym.ContainerEnv, task: str) -> float:
    """Seconds of a reset and its first command, a spare container ready."""
    _warm(env, task)
    spent, _ = _timed(lambda: (env.reset(options={"task": task}), env.step(_bash("true"))))
    env.close()
    return spent


def fork_cost(env: gym.ContainerEnv, task: str, k: int) -> float:
    """Seconds of fork(k) at step 3 until every branch is ready."""
    _warm(env, task)
    env.reset(options={"task": task})
    for command in PREFIX:
        env.step(_bash(command))
    _warm(env, task)  # the parent took a spare: its refill is not the fork's cost
    spent, branches = _timed(lambda: env.fork(k))
    for branch in (env, *branches):
        branch.close()
    return spent


def replay_cost(task: str, k: int) -> float:
    """Seconds of k fresh episodes replaying the prefix, one after the other."""
    envs = [gym.make("boxgym/PyRepo-v0", run="bench-fork").unwrapped for _ in range(k)]

    def replay() -> None:
        for env in envs:
            env.reset(options={"task": task})
            for command in PREFIX:
                env.step(_bash(command))

    spent, _ = _timed(replay)
    for env in envs:
        env.close()
    return spent


def measure(
    reps: int, k: int, task: str = "calc-precedence", pool: int = 0, replay: bool = True
) -> dict[str, list[float]]:
    """Seconds of each measure per rep, interleaved: warm reset, fork(1), fork(k), replay(k)."""
    env = gym.make("boxgym/PyRepo-v0", run="bench-fork").unwrapped
    env.sandboxes.resize(pool or k + 1)
    rows: dict[str, list[float]] = {"warm reset": [], "fork(1)": [], f"fork({k})": []}
    if replay:
        rows[f"replay({k})"] = []
    for _ in range(reps):
        rows["warm reset"].append(warm_reset(env, task))
        rows["fork(1)"].append(fork_cost(env, task, 1))
        rows[f"fork({k})"].append(fork_cost(env, task, k))
        if replay:
            _warm(env, task)
            rows[f"replay({k})"].append(replay_cost(task, k))
    env.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--task", default="calc-precedence")
    parser.add_argument("--pool", type=int, default=0, help="spares kept (default k + 1)")
    args = parser.parse_args()
    rows = measure(args.reps, args.k, args.task, args.pool)
    print(f"pool {args.pool or args.k + 1}, load {os.getloadavg()[0]:.1f}")
    print(table(rows))


def table(rows: dict[str, list[float]]) -> str:
    """The measures as a markdown table: medians, extremes, x warm reset, per branch."""
    base = statistics.median(rows["warm reset"])
    reps = len(rows["warm reset"])
    lines = [
        f"| what | median s ({reps} reps) | min s | max s | x warm reset | per branch |",
        "|---|---|---|---|---|---|",
    ]
    for name, values in rows.items():
        med = statistics.median(values)
        each = med / base / int(name.partition("(")[2].rstrip(")") or 1)
        lines.append(
            f"| {name} | {med:.3f} | {min(values):.3f} | {max(values):.3f} | {med / base:.2f} "
            f"| {each:.2f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
