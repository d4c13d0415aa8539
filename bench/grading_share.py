"""What grading costs a tool-call episode: the (b) workload of bench/scale.py three ways.

    .venv/bin/python bench/grading_share.py [--episodes 16] [--concurrency 4] [--reps 7]

The same run (PyFunc-v0, ten scripted `bash` calls, then graded; `gym._run._runner.run`, as
bench/_boxgym_scripted.py), interleaved, ``--reps`` times each:

1. ``real``: graded as always, by the trusted grading script in a fresh grading container;
2. ``bare``: the same grading container (same pool, settings and bundle streamed in), its
   main process a bare interpreter that reads the bundle and prints an empty report:
   what the runner, the judge and the worker cost is gone, the container's is not;
3. ``none``: no grading container at all (an empty report).

Modes 2 and 3 exist only here, to split the cost (the episodes they store are not
graded). Medians of the episodes per second of the whole command and of the whole
machine's busy CPU-seconds per episode; writes docs/benchmarks.md (``grading-share``).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _report import machine, write_section  # noqa: E402
from scale import CALLS, _busy  # noqa: E402

from gym._core._exit import leave  # noqa: E402

MODES = ("real", "bare", "none")
_BARE = (
    "import sys\nsys.stdin.buffer.read()\n"
    "sys.stdout.write('__BOXGYM_REPORT__\\n' + "
    '\'{"runner": "bare", "version": "2", "kind": "calls", "finished": true}\')\n'
)


def episodes(mode: str, n: int, c: int, db: str) -> None:
    """Run the workload in this process, grading as ``mode`` says."""
    import gym._grading._checks as checks
    import gym._grading._code as code
    from gym import ScriptPolicy, ToolCall
    from gym._run._runner import RunConfig, run
    from gym._store import Store

    if mode != "real":
        real = vars(code)["run_checks"]  # where code grading looks it up
        checks._BOOT = _BARE

        def empty(image: str, base: Any, export: Any, spec: Any, **kw: Any) -> Any:
            if mode == "bare":
                return real(image, base, export, spec, **kw)
            return checks.RunnerReport(runner="none", version="2", kind=spec.kind, finished=True)

        vars(code)["run_checks"] = empty
    script = [ToolCall(name="bash", arguments={"command": cmd}) for cmd in CALLS]
    config = RunConfig(envs=["boxgym/PyFunc-v0"], policy="bench-bash", limit=n, max_steps=50)
    run(config, store=Store(db), policy_factory=lambda: ScriptPolicy(script), concurrency=c)


def measure(mode: str, n: int, c: int, work: Path) -> dict[str, float]:
    db = f"sqlite:///{tempfile.mkdtemp(dir=work)}/runs.db"
    cmd = [sys.executable, __file__, "--mode", mode, "--episodes", str(n)]
    cmd += ["--concurrency", str(c), "--db", db]
    busy, start = _busy(), time.time()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall, cpu = time.time() - start, _busy() - busy
    return {"eps": n / wall, "cpu": cpu / n}


def report(rows: dict[str, list[dict[str, float]]], opts: argparse.Namespace) -> str:
    eps = {m: statistics.median(r["eps"] for r in rows[m]) for m in MODES}
    cpu = {m: statistics.median(r["cpu"] for r in rows[m]) for m in MODES}
    lines = [
        "## What grading costs a tool-call episode",
        "",
        f"Command: `.venv/bin/python bench/grading_share.py --episodes {opts.episodes} "
        f"--concurrency {opts.concurrency} --reps {opts.reps}`",
        f"Machine: {machine()}",
        "",
        "The (b) workload of `bench/scale.py` (ten `bash` calls, then graded), three ways, "
        "interleaved; medians (single runs in brackets):",
        "",
        "| grading | episodes/s | machine CPU-s per episode |",
        "|---|---|---|",
    ]
    names = {
        "real": "the trusted runner in a fresh container (as always)",
        "bare": "the same container, a bare interpreter as its main process",
        "none": "no grading container",
    }
    for m in MODES:
        runs = " ".join(f"{r['eps']:.2f}" for r in rows[m])
        lines.append(f"| {names[m]} | {eps[m]:.2f} ({runs}) | {cpu[m]:.3f} |")
    lines += [
        "",
        f"The grading script, checker and worker cost {cpu['real'] - cpu['bare']:.3f} CPU-s per episode "
        f"({eps['bare'] / eps['real']:.2f}x the episodes/s without them); the grading "
        f"container's lifecycle {cpu['bare'] - cpu['none']:.3f} "
        f"({eps['none'] / eps['bare']:.2f}x without it).",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.mode:
        episodes(opts.mode, opts.episodes, opts.concurrency, opts.db)
        leave(0)  # as `gym run` and bench/_boxgym_scripted.py end
    rows: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(opts.reps):
            for mode in MODES if rep % 2 == 0 else MODES[::-1]:
                rows[mode].append(measure(mode, opts.episodes, opts.concurrency, Path(tmp)))
                print(f"rep {rep} {mode:4s} {rows[mode][-1]['eps']:.2f} eps/s", flush=True)
    body = report(rows, opts)
    print(body)
    write_section("grading-share", body)


if __name__ == "__main__":
    main()
