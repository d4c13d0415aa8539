"""What a container's seccomp filter costs: boxgym's profile against the engine's default.

    .venv/bin/python bench/seccomp_cost.py [--rounds 5] [--execs 20] [--lifecycles 16]

runc compiles a container's filter at its start and at every exec. The same work three
ways, interleaved round by round: under boxgym's profile (gym/_sandbox/_seccomp.py: one
architecture), under the engine's default (x86_64 with its x86 and x32 ABIs), and with
no filter (``seccomp=unconfined``, the floor). Measured as the whole machine's busy
CPU-seconds (/proc/stat): execs of ``true`` into one started container each, and bare
lifecycles (create, start, exit, auto-remove; 4 at once) of boxgym's hardened image.
Writes docs/benchmarks.md (section ``seccomp``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import docker
from docker.models.containers import _create_container_args

from gym._sandbox import SandboxConfig, _seccomp
from gym._sandbox._images import ensure_image
from gym._sandbox._netless import netless, release

sys.path.insert(0, str(Path(__file__).parent))
from _report import machine, write_section  # noqa: E402

engine = docker.from_env()


def busy() -> float:
    """CPU-seconds the whole machine has been busy."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:8]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def variants(base: dict[str, Any]) -> dict[str, dict[str, Any]]:
    options = base["security_opt"]
    return {
        "boxgym's profile": _seccomp.apply(base, engine),
        "engine default": base,
        "no filter": {**base, "security_opt": [*options, "seccomp=unconfined"]},
    }


def lifecycle(args: dict[str, Any]) -> None:
    fast = netless(dict(args))
    try:
        created = _create_container_args({**fast, "version": engine.api._version})
        cid = engine.api.create_container(**created)["Id"]
        url = engine.api._url("/containers/{0}/wait", cid)
        removed = engine.api._post(url, params={"condition": "removed"}, stream=True, timeout=60)
        engine.api.start(cid)
        removed.json()
        removed.close()
    finally:
        release(fast)


def per_call(fn: Callable[[], None], n: int, at_once: int = 1) -> float:
    """Machine CPU-seconds per call of ``fn``, ``n`` calls, ``at_once`` at a time."""
    before = busy()
    with ThreadPoolExecutor(at_once) as pool:
        list(pool.map(lambda _: fn(), range(n)))
    time.sleep(0.3)  # removals finishing in the engine
    return (busy() - before) / n


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--execs", type=int, default=20)
    parser.add_argument("--lifecycles", type=int, default=16)
    opts = parser.parse_args()
    config = SandboxConfig(image=ensure_image("python"))
    base = config.create_kwargs({"boxgym.run": "bench-seccomp"}, ["true"])
    base.pop("detach")
    base |= {"auto_remove": True, "log_config": {"Type": "none", "Config": {}}}
    kinds = variants(base)
    holders = {}
    for name, args in kinds.items():
        held = {**args, "command": ["sleep", "600"], "auto_remove": True}
        holders[name] = engine.containers.run(detach=True, **netless(held))
    execs: dict[str, list[float]] = {k: [] for k in kinds}
    lives: dict[str, list[float]] = {k: [] for k in kinds}
    try:
        for args in kinds.values():  # warm-up: image layers and binaries cached
            lifecycle(args)
        for rnd in range(opts.rounds):
            order = list(kinds) if rnd % 2 == 0 else list(kinds)[::-1]
            for name in order:
                cid = holders[name].id

                def one_exec(cid: str = cid) -> None:
                    exec_id = engine.api.exec_create(cid, ["true"], user=config.exec_user)["Id"]
                    engine.api.exec_start(exec_id)

                execs[name].append(per_call(one_exec, opts.execs))
                lives[name].append(per_call(lambda a=kinds[name]: lifecycle(a), opts.lifecycles, 4))
            print(f"round {rnd + 1}/{opts.rounds} done", flush=True)
    finally:
        for holder in holders.values():
            holder.remove(force=True)
    report(opts, execs, lives)


def report(opts: argparse.Namespace, execs: dict, lives: dict) -> None:
    def med(values: list[float]) -> float:
        return statistics.median(values)

    ours = "boxgym's profile"
    lines = [
        "| filter | CPU-s per exec | CPU-s per lifecycle |",
        "|---|---|---|",
    ]
    for name in execs:
        lines.append(f"| {name} | {med(execs[name]):.4f} | {med(lives[name]):.4f} |")
    exec_ratio = med(execs[ours]) / med(execs["engine default"])
    life_ratio = med(lives[ours]) / med(lives["engine default"])
    body = f"""
## What a seccomp filter costs a container

Command: `.venv/bin/python bench/seccomp_cost.py --rounds {opts.rounds} --execs {opts.execs} --lifecycles {opts.lifecycles}`
Machine: {machine()}

runc compiles a container's filter at its start and at each exec. Machine CPU-seconds
(all processes, from /proc/stat), medians of {opts.rounds} interleaved rounds; per exec:
{opts.execs} execs of `true` into a started container; per lifecycle: {opts.lifecycles}
bare lifecycles of boxgym's hardened python image, 4 at once.

{chr(10).join(lines)}

boxgym's profile (one architecture, gym/_sandbox/_seccomp.py) costs **{exec_ratio:.2f}x**
the engine default's CPU per exec and **{life_ratio:.2f}x** per lifecycle. The engine's
default profile admits the host's 32-bit ABIs too (x86 and x32 beside x86_64), so runc
builds a filter for three architectures where boxgym's has one.
"""
    print(body)
    write_section("seccomp", body)


if __name__ == "__main__":
    main()
