"""Time to a first step of boxgym/SQL-v0 against plain container starts, side by side.

    .venv/bin/python bench/sql_ready.py [--quick]

Measures, in one run on one machine:

- `docker run --rm debian:bookworm-slim true` through the docker CLI;
- a plain container create + start through the Docker SDK (removal not counted);
- the SQL-v0 time to a first step, `reset()` then `sql("select 1")`: cold (no warm
  pool: container create, hardening, boot of the database server, shell, first query)
  and from the warm pool at steady state (the pool refilled between episodes);
- creating a sandbox and booting the server with its data directory on the container
  layer (what SQL-v0 does) against copying it onto a tmpfs first (the alternative);
- grading: the submit step of an oracle episode, for a read and a write task.

Writes the figures and ratios to docs/benchmarks.md (section sql-ready).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import docker

import gym
import gym.sandbox
from environments.sql.grading import PG_USER
from gym.sandbox import DockerSandbox

sys.path.insert(0, str(Path(__file__).parent))
from _report import machine, pct, timed, write_section  # noqa: E402

ENV_ID = "boxgym/SQL-v0"
SANDBOXES = gym.sandbox.default_sandboxes()
"""The provider the environments use (its pools are the ones measured)."""
BASE = "debian:bookworm-slim"
TARGET = 3.0


def plain_start(client: docker.DockerClient) -> float:
    start = time.perf_counter()
    c = client.containers.create(BASE, ["sleep", "60"], network_mode="none")
    c.start()
    took = time.perf_counter() - start
    c.remove(force=True)
    return took


def first_step(env) -> float:
    start = time.perf_counter()
    env.reset(options={"task": "customers-per-country"})
    obs = env.step({"name": "sql", "arguments": {"query": "select 1"}})[0]
    took = time.perf_counter() - start
    assert "(1 row)" in obs, obs
    return took


def wait_full(pool) -> None:
    deadline = time.monotonic() + 60
    while len(pool._ready) < pool.size and time.monotonic() < deadline:
        time.sleep(0.01)


def boot_variant(image: str, tmpfs: bool) -> float:
    settings = dict(gym.make(ENV_ID).unwrapped.sandbox_settings)
    if tmpfs:
        settings["read_only"] = True
        settings["tmpfs"] = {
            **settings["tmpfs"],
            "/pg": "size=512m,uid=999,gid=999,mode=0700",
            "/run/postgresql": "size=1m,uid=999,gid=999,mode=0755",
        }
        settings["boot"] = ((PG_USER, "/usr/local/bin/boxgym-pg-start --copy /pg"),)
    config = gym.sandbox.SandboxConfig(image=image, **settings)
    start = time.perf_counter()
    box = DockerSandbox.create(config, run="bench", gate=SANDBOXES.pools.gate)
    took = time.perf_counter() - start
    SANDBOXES.release(box)
    return took


def grading_time(env, task: str) -> float:
    inner = env.unwrapped
    env.reset(options={"task": task})
    calls = inner.oracle_calls(inner.task)
    for call in calls[:-1]:
        env.step(call.model_dump())
    start = time.perf_counter()
    _, _, _, _, info = env.step(calls[-1].model_dump())
    assert info["verdict"]["outcome"] == "pass", info["verdict"]
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    opts = parser.parse_args()
    n = 8 if opts.quick else 20
    client = docker.from_env()
    env = gym.make(ENV_ID)
    image = env.unwrapped.sandbox_config().image
    results: dict[str, list[float]] = {}

    def cli_run() -> None:
        subprocess.run(["docker", "run", "--rm", "--network", "none", BASE, "true"], check=True)

    cli_run()
    plain_start(client)
    results["docker run --rm (CLI)"] = timed(cli_run, n)
    results["create+start (SDK)"] = [plain_start(client) for _ in range(n)]

    SANDBOXES.resize(0)
    first_step(env)
    results["SQL-v0 first step, cold"] = [first_step(env) for _ in range(n)]
    SANDBOXES.resize(1)
    pool = SANDBOXES.pool_for(env.unwrapped.sandbox_config())
    warm = []
    for _ in range(n):
        wait_full(pool)
        warm.append(first_step(env))
    results["SQL-v0 first step, warm pool"] = warm
    SANDBOXES.resize(0)
    results["create+boot, data on the layer"] = [boot_variant(image, False) for _ in range(n)]
    results["create+boot, data copied to tmpfs"] = [boot_variant(image, True) for _ in range(n)]
    SANDBOXES.resize(1)
    k = max(3, n // 4)
    results["grading (submit), read task"] = [
        grading_time(env, "loyal-customers") for _ in range(k)
    ]
    results["grading (submit), write task"] = [grading_time(env, "cap-discounts") for _ in range(k)]
    env.close()
    write(results, opts.quick)


def write(results: dict[str, list[float]], quick: bool) -> None:
    sdk = pct(results["create+start (SDK)"], 50)
    rows = ["| operation | n | p50 ms | p90 ms | p50 / SDK create+start |", "|---|---|---|---|---|"]
    for name, values in results.items():
        rows.append(
            f"| {name} | {len(values)} | {pct(values, 50) * 1000:.0f} | "
            f"{pct(values, 90) * 1000:.0f} | {pct(values, 50) / sdk:.2f}x |"
        )
    cold = pct(results["SQL-v0 first step, cold"], 50) / sdk
    cold_cli = pct(results["SQL-v0 first step, cold"], 50) / pct(
        results["docker run --rm (CLI)"], 50
    )
    warm = pct(results["SQL-v0 first step, warm pool"], 50) / sdk
    met = "met" if cold <= TARGET else "NOT met"
    body = f"""## SQL-v0: time to a first step

Command: `.venv/bin/python bench/sql_ready.py{" --quick" if quick else ""}`
Machine: {machine()}; environment `{ENV_ID}`.

A first step is `reset()` then `sql("select 1")`. Baselines, measured in the same run:
`docker run --rm {BASE} true` (CLI) and a plain create + start through the Docker SDK.

{chr(10).join(rows)}

- Cold first step p50 = **{cold:.2f}x** a plain SDK create + start ({cold_cli:.2f}x
  `docker run --rm`); target <= {TARGET:g}x: {met}.
- Warm-pool first step p50 = **{warm:.2f}x** a plain SDK create + start.

The database server is started by a boot step as its own user before a container
enters the warm pool; its data directory was initialised, loaded and cleanly shut down
at build time and stays on the container layer, which boots faster than copying it
onto a tmpfs (rows "create+boot"). Each `sql` call starts a small libpq client in the
container through the persistent shell. Grading freezes and dumps the database
(`pg_dump`), restores it as the agent role in a fresh grading container taken from a
warm pool and snapshots it; the pristine and gold snapshots are cached per process.
"""
    write_section("sql-ready", body)
    print(body)


if __name__ == "__main__":
    main()
