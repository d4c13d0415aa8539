"""Grading throughput against the engine's own limit, side by side in one run.

    .venv/bin/python bench/grading_throughput.py [--concurrency N] [--limit N]

Three rates, measured one after the other on the same machine and engine:

1. bare containers: create, start and remove a container (same image, network none)
   running ``true``, N in parallel: the engine's limit for container lifecycles;
2. boxgym grading: the 164 HumanEval canonical solutions, each graded by
   ``gym.grading.grade_code`` in its own fresh, one-shot hardened grading container,
   N in parallel; every one must pass;
3. unsandboxed: the same checks run in plain local subprocesses (no container), N in
   parallel, as the floor a harness without isolation would pay.

Writes the figures and the ratios to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gym
import gym.authoring
import gym.grading
from gym._sandbox import client

sys.path.insert(0, str(Path(__file__).parent))
from _report import machine, write_section  # noqa: E402

ENV_ID = "boxgym/HumanEval-v0"


def bare_rate(image: str, n: int, concurrency: int) -> float:
    engine = client()

    def one(_: int) -> None:
        c = engine.containers.create(
            image, ["true"], network_mode="none", labels={"boxgym.run": "bench"}
        )
        c.start()
        c.wait()
        c.remove(force=True)

    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(n)))
    return n / (time.perf_counter() - start)


def grading_rate(tasks: list[gym.Task], image: str, concurrency: int) -> tuple[float, int]:
    def one(task: gym.Task) -> bool:
        export = gym.grading.Export(files=gym.authoring.read_tree(task.folder() / "oracle"))
        return gym.grading.grade_code(task, export, image).outcome == "pass"

    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        passed = sum(pool.map(one, tasks))
    return len(tasks) / (time.perf_counter() - start), passed


CHECK = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("solution", sys.argv[1])
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
ns = {}
exec(open(sys.argv[2]).read(), ns)
ns["check_all"](getattr(mod, sys.argv[3]))
"""


def subprocess_rate(tasks: list[gym.Task], concurrency: int) -> tuple[float, int]:
    def one(task: gym.Task) -> bool:
        grading = task.data["grading"]
        folder = task.folder()
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                CHECK,
                str(folder / "oracle" / grading["module"]),
                str(folder / "hidden" / "checks.py"),
                grading["entry"],
            ],
            capture_output=True,
            timeout=60,
            cwd=tempfile.gettempdir(),
        )
        return done.returncode == 0

    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        passed = sum(pool.map(one, tasks))
    return len(tasks) / (time.perf_counter() - start), passed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--limit", type=int, default=None, help="grade only N problems")
    opts = parser.parse_args()
    env = gym.make(ENV_ID)
    tasks = env.unwrapped.tasks[: opts.limit]
    image = env.unwrapped.sandbox_config().image
    env.close()
    gym.grading.grade_code(
        tasks[0], gym.grading.Export(), image
    )  # one grading before timing: first-use costs
    bare = bare_rate(image, len(tasks), opts.concurrency)
    graded, passed = grading_rate(tasks, image, opts.concurrency)
    local, local_passed = subprocess_rate(tasks, opts.concurrency)
    ratio = graded / bare
    limit = f" --limit {opts.limit}" if opts.limit else ""
    body = f"""## Grading throughput (HumanEval canonical solutions)

Command: `.venv/bin/python bench/grading_throughput.py --concurrency {opts.concurrency}{limit}`
Machine: {machine()}; {len(tasks)} problems, {opts.concurrency} in parallel.

| what | tasks/s | passed |
|---|---|---|
| bare containers: create, start, remove (`true`) | {bare:.2f} | - |
| boxgym: each solution graded in its own fresh hardened container | {graded:.2f} | {passed}/{len(tasks)} |
| unsandboxed: the same checks in local subprocesses | {local:.2f} | {local_passed}/{len(tasks)} |

- Grading runs at **{ratio:.2f}x** the engine's bare container lifecycle rate
  (target >= 0.7x): {"met" if ratio >= 0.7 else "NOT met"}.
- Unsandboxed subprocesses are {local / graded:.1f}x faster than sandboxed grading: the
  price of a fresh container per grading and a separate unprivileged process for the
  code under test.

A grading is one fresh container whose main process is the trusted runner's boot
(no exec, no pool): the solution, the hidden checks and the runner are streamed in on
its standard input, the runner forks the code under test as another uid, and the
report is printed from a root-only directory. The container is removed in the
background.
"""
    write_section("grading-throughput", body)
    print(body)
    if passed != len(tasks):
        sys.exit(f"{len(tasks) - passed} canonical solutions did not pass")


if __name__ == "__main__":
    main()
