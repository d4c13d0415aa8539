"""Reset and step latency of boxgym environments against the docker CLI, side by side.

    .venv/bin/python bench/sandbox_latency.py [--quick]

Measures, in one run on one machine: `docker run --rm IMAGE true` and
`docker exec CONTAINER true` through the docker CLI (the baselines); a cold reset
(no warm pool); a warm-pool reset at steady state (the pool refilled between
episodes, as it is while an agent works); and a no-op step (`bash("true")`) through the
Gymnasium API. Writes the figures and ratios to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import gymnasium

from gym.sandbox import default_sandboxes

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from _report import machine, pct, timed, write_section  # noqa: E402

ENV_ID = "boxgym/PyRepo-v0"


def cli(*args: str) -> None:
    subprocess.run(["docker", *args], check=True, capture_output=True)


def verdict(ratio: float, target: float) -> str:
    return "met" if ratio <= target else "NOT met"


def wait_full(pool) -> None:
    deadline = time.monotonic() + 30
    while len(pool._ready) < pool.size and time.monotonic() < deadline:
        time.sleep(0.01)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    opts = parser.parse_args()
    n_run, n_exec, n_reset, n_step = (8, 20, 8, 100) if opts.quick else (30, 100, 30, 500)

    env = gymnasium.make(ENV_ID, max_episode_steps=None).unwrapped
    task = env.tasks[0].id
    image = env.sandbox_config().image
    results: dict[str, list[float]] = {}

    results["docker run --rm (CLI)"] = timed(
        lambda: cli("run", "--rm", "--network", "none", image, "true"), n_run
    )
    cid = subprocess.run(
        ["docker", "run", "-d", "--rm", "--network", "none", image, "sleep", "600"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    try:
        results["docker exec (CLI)"] = timed(lambda: cli("exec", cid, "true"), n_exec)
    finally:
        cli("rm", "-f", cid)

    default_sandboxes().resize(0)
    env.reset(options={"task": task})
    results["env.reset, cold (no pool)"] = timed(lambda: env.reset(options={"task": task}), n_reset)

    default_sandboxes().resize(2)
    pool = default_sandboxes().pool_for(env.sandbox_config())
    warm = []
    for _ in range(n_reset):
        wait_full(pool)
        start = time.perf_counter()
        env.reset(options={"task": task})
        warm.append(time.perf_counter() - start)
    results["env.reset, warm pool"] = warm

    noop = {"name": "bash", "arguments": {"command": "true"}}
    env.reset(options={"task": task})
    results["env.step bash('true')"] = timed(lambda: env.step(noop), n_step)
    env.close()

    run50, exec50 = pct(results["docker run --rm (CLI)"], 50), pct(results["docker exec (CLI)"], 50)
    rows = ["| operation | n | p50 ms | p99 ms | p50 ratio |", "|---|---|---|---|---|"]
    for name, values in results.items():
        base = run50 if "reset" in name or "run" in name else exec50
        rows.append(
            f"| {name} | {len(values)} | {pct(values, 50) * 1000:.2f} | "
            f"{pct(values, 99) * 1000:.2f} | {pct(values, 50) / base:.3f}x |"
        )
    reset_ratio = pct(results["env.reset, warm pool"], 50) / run50
    step_ratio = pct(results["env.step bash('true')"], 50) / exec50
    body = f"""## Reset and step latency

Command: `.venv/bin/python bench/sandbox_latency.py{" --quick" if opts.quick else ""}`
Machine: {machine()}; environment `{ENV_ID}`, task `{task}`.

Resets are compared with `docker run --rm` and steps with `docker exec`, both through
the docker CLI, measured in the same run.

{chr(10).join(rows)}

- Warm-pool reset p50 = **{reset_ratio:.3f}x** `docker run --rm` (target <= 0.1x):
  {verdict(reset_ratio, 0.1)}.
- No-op step p50 = **{step_ratio:.3f}x** `docker exec` (target <= 0.05x):
  {verdict(step_ratio, 0.05)}.

A warm-pool reset takes a started container with its shell already open and writes the
task's files (with their one-commit git history) through that shell; the used
container is removed in the background. A step goes through the persistent shell:
one write and one read on an open exec socket, no new process for `true`.
"""
    write_section("sandbox-latency", body)
    print(body)


if __name__ == "__main__":
    main()
