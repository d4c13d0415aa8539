"""Grading time per episode of two checkouts of boxgym, side by side under the same load.

    .venv/bin/python bench/grading_before_after.py --before PATH [--after PATH]
        [--family pyrepo] [--rounds 1]

Each task's reference solution (its ``oracle/`` files, as an export) is graded by
``gym.grade_code`` once per checkout and round, in a fresh process per grading, the two
checkouts alternating task by task (and which goes first alternating too), so both see
the same load. Only the grading is timed, not the process start. Prints one line per
task and the medians, the totals and the median of the per-task ratios (after/before).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
ONE = """
import json, sys, time
import gym
from gym._envs._registry import make
family, task_id = sys.argv[1], sys.argv[2]
env = make({"pyrepo": "boxgym/PyRepo-v0", "pyfunc": "boxgym/PyFunc-v0"}[family]).unwrapped
task = env.task_by_id(task_id)
export = gym.Export(files=gym.read_tree(task.folder() / "oracle"))
image = gym.ensure_image("python")
start = time.monotonic()
verdict = gym.grade_code(task, export, image)
print(json.dumps([time.monotonic() - start, verdict.outcome]))
"""


def grade(root: Path, family: str, task: str) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", ONE, family, task],
        capture_output=True,
        text=True,
        cwd=root,
        env=env,
        check=True,
    )
    seconds, outcome = json.loads(done.stdout.strip().splitlines()[-1])
    return seconds, outcome


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, default=HERE)
    parser.add_argument("--family", default="pyrepo")
    parser.add_argument("--rounds", type=int, default=1)
    opts = parser.parse_args()
    roots = {"before": opts.before, "after": opts.after}
    tasks = sorted(p.name for p in (HERE / "seeds" / opts.family).iterdir() if p.is_dir())
    times: dict[str, dict[str, list[float]]] = {k: {} for k in roots}
    for r in range(opts.rounds):
        for i, task in enumerate(tasks):
            order = ["before", "after"] if (i + r) % 2 == 0 else ["after", "before"]
            row = {}
            for which in order:
                seconds, outcome = grade(roots[which], opts.family, task)
                times[which].setdefault(task, []).append(seconds)
                row[which] = f"{seconds:6.2f}s {outcome}"
            print(f"{task:28} before {row['before']}  after {row['after']}", flush=True)
    for which in roots:
        flat = [s for runs in times[which].values() for s in runs]
        print(
            f"{which}: median {statistics.median(flat):.2f}s, mean {statistics.mean(flat):.2f}s,"
            f" total {sum(flat):.0f}s over {len(flat)} gradings"
        )
    ratios = [
        statistics.median(times["after"][t]) / statistics.median(times["before"][t]) for t in tasks
    ]
    print(f"after/before per task: median {statistics.median(ratios):.2f}, max {max(ratios):.2f}")


if __name__ == "__main__":
    main()
