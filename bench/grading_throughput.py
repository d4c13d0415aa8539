"""Grading throughput against the engine's own limit, side by side in one run.

    .venv/bin/python bench/grading_throughput.py [--concurrency N] [--limit N]
        [--against REV [--reps R] [--env ID]]

Three rates, measured one after the other on the same machine and engine:

1. bare containers: create, start and remove a container (same image, network none)
   running ``true``, N in parallel: the engine's limit for container lifecycles;
2. boxgym grading: the 164 HumanEval canonical solutions, each graded by
   ``gym.grading.grade_code`` in its own fresh, one-shot hardened grading container,
   N in parallel; every one must pass;
3. unsandboxed: the same checks run in plain local subprocesses (no container), N in
   parallel, as the floor a harness without isolation would pay.

With ``--against REV`` it measures instead the grading rate of this checkout's grading
script against the grading script of the git revision REV (the files of
gym/_grading/runner/ that REV has, shipped into each grading container), alternating the
two R times in one process on the same tasks (HumanEval's by default, or ``--env``), and
writes the ratio of the medians.

Writes the figures and the ratios to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gym
import gym.authoring
import gym.grading
from gym._grading import _checks
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


def _git(root: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, check=True).stdout


def runner_at(rev: str) -> dict[str, bytes]:
    """The grading script's files as the git revision ``rev`` ships them.

    The files are the ones ``rev`` has, not today's names: revisions before the checker
    was named ship ``boxgym_judge.py`` where this one ships ``boxgym_checker.py``.
    """
    root = Path(__file__).resolve().parents[1]
    folder = _checks.RUNNER_PATH.parent.relative_to(root).as_posix()
    try:
        listed = _git(root, "ls-tree", "--name-only", f"{rev}:{folder}").decode().split()
    except subprocess.CalledProcessError as exc:
        sys.exit(f"git cannot list {rev}:{folder}: {exc.stderr.decode().strip()}")
    names = sorted(n for n in listed if n.startswith("boxgym_") and n.endswith(".py"))
    if _checks.RUNNER_PATH.name not in names:
        sys.exit(f"{rev} has no {folder}/{_checks.RUNNER_PATH.name}: pick a later revision")
    return {name: _git(root, "show", f"{rev}:{folder}/{name}") for name in names}


def against(opts: argparse.Namespace) -> None:
    """This grading script's grading rate against REV's, alternating, on the same tasks."""
    env = gym.make(opts.env)
    tasks = env.unwrapped.tasks[: opts.limit]
    image = env.unwrapped.sandbox_config().image
    env.close()
    runners = {"this checkout": dict(_checks._RUNNER), opts.against: runner_at(opts.against)}
    rates: dict[str, list[float]] = {name: [] for name in runners}
    for name in runners:  # one grading each before timing: first-use costs
        _checks._RUNNER.clear()
        _checks._RUNNER.update(runners[name])
        grading_rate(tasks[:1], image, 1)
    for rep in range(opts.reps):
        for name in list(runners)[:: 1 if rep % 2 == 0 else -1]:
            _checks._RUNNER.clear()
            _checks._RUNNER.update(runners[name])
            rate, passed = grading_rate(tasks, image, opts.concurrency)
            rates[name].append(rate)
            print(f"rep {rep + 1} {name}: {rate:.2f} tasks/s, {passed}/{len(tasks)} passed")
    now, before = (statistics.median(rates[n]) for n in runners)
    ratio = now / before
    limit = f" --limit {opts.limit}" if opts.limit else ""
    body = f"""## Grading throughput against an earlier grading script

Command: `.venv/bin/python bench/grading_throughput.py --against {opts.against} --env {opts.env} --reps {opts.reps} --concurrency {opts.concurrency}{limit}`
Machine: {machine()}; {len(tasks)} reference solutions of {opts.env}, {opts.concurrency} in
parallel, the two grading scripts alternating {opts.reps} times in one process.

| grading script | tasks/s (each rep) | median |
|---|---|---|
| this checkout | {", ".join(f"{r:.2f}" for r in rates["this checkout"])} | {now:.2f} |
| {opts.against} | {", ".join(f"{r:.2f}" for r in rates[opts.against])} | {before:.2f} |

- This checkout grades at **{ratio:.2f}x** the rate of {opts.against} (target >= 0.9x):
  {"met" if ratio >= 0.9 else "NOT met"}.
"""
    write_section(f"grading-against-{opts.env.split('/')[-1]}", body)
    print(body)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--limit", type=int, default=None, help="grade only N problems")
    parser.add_argument("--against", default=None, help="a git revision to compare with")
    parser.add_argument("--reps", type=int, default=3, help="alternations (with --against)")
    parser.add_argument("--env", default=ENV_ID, help="the tasks graded (with --against)")
    opts = parser.parse_args()
    if opts.against:
        against(opts)
        return
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

A grading is one fresh container whose main process is the grading script's boot
(no exec, no pool): the solution, the hidden checks and the grading script are streamed
in on its standard input, the grading script starts the code under test as another uid,
and the report is printed from a root-only directory. The container is removed in the
background.
"""
    write_section("grading-throughput", body)
    print(body)
    if passed != len(tasks):
        sys.exit(f"{len(tasks) - passed} canonical solutions did not pass")


if __name__ == "__main__":
    main()
