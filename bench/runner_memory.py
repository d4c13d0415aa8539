"""The runner's memory over many episodes: RSS after 200 and after 2,000 short episodes.

    .venv/bin/python bench/runner_memory.py [--episodes 2000] [--concurrency 4]

Runs the real runner (planning, worker threads, warm pools, the SQLite store, progress)
over short episodes of a PyFunc task driven by the noop policy. To keep the run short,
the episodes are graded host-side by a trivial grader (this measures the runner, not
the graders), but every episode still gets its own fresh container. Writes the RSS at
both points and their ratio to docs/benchmarks.md (target: within 1.2x).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import gym
import gym.grading
import gym.sandbox
from gym.runs import RunConfig, Store, run

sys.path.insert(0, str(Path(__file__).parent))
from _report import machine, write_section  # noqa: E402


class QuickGradedPyFunc(gym.CodeEnv):
    """PyFunc with a host-side grade, so that an episode costs one container."""

    family: ClassVar[str] = "pyfunc"
    image: ClassVar[str] = "python"

    def export(self, task: gym.Task, sandbox: gym.sandbox.Sandbox) -> gym.grading.Export:
        return gym.grading.Export()  # nothing read back: the episode costs its one container

    def grade(
        self, task: gym.Task, final_state: gym.grading.Export, trajectory: Sequence[gym.StepRecord]
    ) -> gym.Verdict:
        ok = gym.Component(score=0.0, passed=False, explanation="bench: not graded")
        return gym.grading.compose({"bench": ok}, [], grader="bench", version="0")


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=4)
    opts = parser.parse_args()
    gym.register("bench/QuickPyFunc-v0", "__main__:QuickGradedPyFunc", max_steps=5)
    tasks = gym.make("bench/QuickPyFunc-v0").unwrapped.tasks
    k = -(-opts.episodes // len(tasks))
    config = RunConfig(envs=["bench/QuickPyFunc-v0"], policy="noop", k=k)
    checkpoints = {200: 0.0, opts.episodes: 0.0}

    def on_progress(state) -> None:
        if state.done in checkpoints:
            checkpoints[state.done] = rss_mb()
            print(f"{state.done} episodes: RSS {checkpoints[state.done]:.1f} MiB", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"sqlite:///{tmp}/runs.db")
        start = time.monotonic()
        state = run(
            config,
            store=store,
            policy_factory=gym.NoopPolicy,
            concurrency=opts.concurrency,
            progress=on_progress,
        )
        elapsed = time.monotonic() - start
    ratio = checkpoints[opts.episodes] / checkpoints[200]
    body = f"""## Runner memory

Command: `.venv/bin/python bench/runner_memory.py --episodes {opts.episodes} --concurrency {opts.concurrency}`
Machine: {machine()}.

{state.done} short episodes (noop policy, PyFunc tasks, one fresh container each, host-side
trivial grading) through the real runner and a SQLite store, in {elapsed:.0f} s
({state.done / elapsed:.1f} episodes/s).

| after | RSS MiB |
|---|---|
| 200 episodes | {checkpoints[200]:.1f} |
| {opts.episodes} episodes | {checkpoints[opts.episodes]:.1f} |

RSS after {opts.episodes} is **{ratio:.3f}x** RSS after 200 (target <= 1.2x):
{"met" if ratio <= 1.2 else "NOT met"}. Finished episodes are committed and dropped; at
most twice the concurrency are in flight.
"""
    write_section("runner-memory", body)
    print(body)


if __name__ == "__main__":
    main()
