"""The latency-bound regime: episodes waiting on a model server, at 1 to 512 at once.

    python bench/latency.py [--latency 0.5] [--concurrency 1,8,32,64,128,256,512] [--reps 3]
    python bench/latency.py --quick                      # c = 1, 8, 32, few episodes, 1 rep
    python bench/latency.py --from-json DIR/latency.json # report saved rows
    python bench/latency.py --profile 8,64               # where an episode's CPU goes

`gym run boxgym/PyFunc-v0 --policy openai` against a stand-in OpenAI-compatible server
(bench/_standin.py: its own asyncio process, every answer after ``--latency`` seconds,
4 ``bash`` calls then ``submit``), at each concurrency, ``--reps`` times, the
concurrencies in turn (backwards every other rep), medians reported. A run has
``max(--per-c x c, 32)`` episodes (8 at c=1), so that a run lasts long enough to be
steady. Per run: episodes/s of the whole command (and between its 10th and 90th percent
of commits), the machine's CPU-seconds per episode less the stand-in's, the runner's own
(its rusage) and the engine daemons' (dockerd and containerd, from /proc), the runner's
peak RSS and threads, the containers alive (sampled from the engine's cgroups), and the
time from an answer to the request that carries its tool's result (measured by the
server) with the episode's step time (from the store). The same episodes against a
zero-latency server give the CPU-bound reference; agentbox-rl 0.3.0's own CLI
(``agentbox run --base-url``, its shell tool ``run_command``) against the same server at
``--peer-concurrency`` runs side by side (bench/_agentbox.py installs it under ``--work``).

``--profile C,...`` runs one boxgym episode batch per concurrency under ``perf record -a``
(the machine's CPU by process) and ``py-spy`` (the runner's, by what it was doing) and
prints the split; docs/scale.md holds what it found.

Writes docs/benchmarks.md (section ``latency``) and the raw rows to ``--work``/latency.json.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).parent))
from _agentbox import IMAGE, AgentBox  # noqa: E402
from _report import machine, pct, steady_rate, write_section  # noqa: E402
from _standin import StandIn  # noqa: E402
from scale import GYM, Creations, _busy, _median, load  # noqa: E402

TASKS = len([p for p in (ROOT / "seeds" / "pyfunc").iterdir() if p.is_dir()])
CALLS = 4
ENGINE = ("dockerd", "containerd")


def episodes_for(c: int, per_c: float, least: int) -> int:
    """Episodes of a run at concurrency ``c``: ``per_c`` per slot, at least ``least`` (8 at c=1)."""
    return max(math.ceil(per_c * c), least if c > 1 else min(least, 8))


def k_and_limit(n: int) -> tuple[int, int]:
    """(samples per task, tasks) giving about ``n`` episodes from the PyFunc tasks."""
    k = math.ceil(n / TASKS)
    return k, math.ceil(n / k)


class Sampler:
    """Samples, every ``period`` seconds while a command runs: the containers alive on the
    engine (its cgroups, no API call) and the runner's threads."""

    def __init__(self, pid: int, period: float = 0.25) -> None:
        self.pid = pid
        self.period = period
        self.alive: list[int] = []
        self.threads: list[int] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.done.wait(self.period):
            self.alive.append(containers_alive())
            try:
                status = Path(f"/proc/{self.pid}/status").read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("Threads:"):
                    self.threads.append(int(line.split()[1]))

    def stop(self) -> dict[str, Any]:
        self.done.set()
        self.thread.join()
        alive = self.alive or [0]
        return {
            "alive_median": statistics.median(alive),
            "alive_max": max(alive),
            "threads_max": max(self.threads or [0]),
        }


def containers_alive() -> int:
    """Containers the engine runs now (the machine's, every owner), from its cgroups."""
    for folder in (
        "/sys/fs/cgroup/pids/docker",
        "/sys/fs/cgroup/docker",
        "/sys/fs/cgroup/system.slice",
    ):
        path = Path(folder)
        if path.is_dir():
            names = (p.name for p in path.iterdir() if p.is_dir())
            return sum(len(n) >= 64 or n.startswith("docker-") for n in names)
    return -1


def engine_cpu() -> float:
    """CPU-seconds dockerd and containerd have used (their own and their waited children)."""
    total = 0.0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if (proc / "comm").read_text().strip() not in ENGINE:
                continue
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(x) for x in fields[11:15])
    return total / os.sysconf("SC_CLK_TCK")


def containers_cpu() -> float:
    """CPU-seconds every container of the engine has used (the docker cgroup's cumulative
    counter, cgroup v1; NaN where there is none)."""
    path = Path("/sys/fs/cgroup/cpuacct/docker/cpuacct.usage")
    return int(path.read_text()) / 1e9 if path.exists() else float("nan")


def measured(
    cmd: list[str], server: StandIn, *, env: dict[str, str] | None, boxgym: bool
) -> dict[str, Any]:
    """Run a command against ``server``: wall time, CPU split, RSS, containers, its output."""
    server.reset()
    creations = Creations()
    busy, engine, served, start = _busy(), engine_cpu(), server.cpu_s(), time.time()
    boxes = containers_cpu()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=ROOT)
        sampler = Sampler(proc.pid)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.time() - start
        samples = sampler.stop()
        row = {
            "wall": wall,
            "machine_cpu_s": _busy() - busy,
            "engine_cpu_s": engine_cpu() - engine,
            "containers_cpu_s": containers_cpu() - boxes,
            "standin_cpu_s": server.cpu_s() - served,
            "runner_cpu_s": usage.ru_utime + usage.ru_stime,
            "rss_mb": usage.ru_maxrss / 1024,
            **samples,
        }
        row["containers"] = creations.stop(owner_pid=proc.pid if boxgym else None)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(cmd[:5])}... failed ({code}):\n{stderr[-3000:]}")
    stats = server.stats()
    gaps = stats["gaps"]
    row |= {
        "requests": stats["requests"],
        "most_open": stats["most_open"],
        "gap_median_s": statistics.median(gaps) if gaps else None,
        "gap_p90_s": pct(gaps, 90) if gaps else None,
        "stdout": stdout,
    }
    return row


class Bench:
    """The runs, and what each measured."""

    def __init__(self, work: Path, opts: argparse.Namespace, agentbox: AgentBox | None) -> None:
        self.work = work
        self.opts = opts
        self.agentbox = agentbox
        self.env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.rows: list[dict[str, Any]] = []

    def boxgym_cmd(self, server: StandIn, c: int, n: int, tmp: Path) -> list[str]:
        k, limit = k_and_limit(n)
        cmd = [*GYM, "run", "boxgym/PyFunc-v0", "--policy", "openai", "--model", "standin"]
        cmd += ["--base-url", server.url, "--limit", str(limit), "-k", str(k), "-c", str(c)]
        cmd += ["--db", f"sqlite:///{tmp / 'runs.db'}", "--events", str(tmp / "events.jsonl")]
        return [*cmd, "--json"]

    def boxgym(self, server: StandIn, c: int, n: int) -> dict[str, Any]:
        tmp = Path(tempfile.mkdtemp(dir=self.work))
        cmd = self.boxgym_cmd(server, c, n, tmp)
        row = measured(cmd, server, env=self.env, boxgym=True)
        return row | boxgym_details(tmp, row.pop("stdout"))

    def peer(self, server: StandIn, c: int, n: int) -> dict[str, Any]:
        assert self.agentbox is not None
        out = Path(tempfile.mkdtemp(dir=self.work)) / "run"
        k, limit = k_and_limit(n)
        cmd = [str(self.agentbox.cli), "-q", "run", str(self.agentbox.tasks), "--model", "standin"]
        cmd += ["--base-url", server.url, "--tools", "shell", "-c", str(c), "--n", str(k)]
        cmd += ["--limit", str(limit), "--image", IMAGE, "--out", str(out), "--no-progress"]
        cmd += ["--max-steps", str(CALLS + 4)]
        row = measured(cmd, server, env=None, boxgym=False)
        row.pop("stdout")
        trajectories = self.agentbox.results(out)
        row["episodes"] = len(trajectories)
        row["graded"] = sum(t.get("final_status") in ("success", "failed") for t in trajectories)
        row["infra"] = len(trajectories) - row["graded"]
        return row

    def measure(self, kind: str, server: StandIn, c: int, rep: int) -> None:
        n = episodes_for(c, self.opts.per_c, self.opts.least)
        sides = ["boxgym"] + (["agentbox"] if kind == "latency" and c in self.opts.peer_cs else [])
        for side in sides if rep % 2 == 0 else sides[::-1]:
            result = self.boxgym(server, c, n) if side == "boxgym" else self.peer(server, c, n)
            episodes = result.get("episodes") or n
            row = {"kind": kind, "c": c, "rep": rep, "side": side, "n": episodes, **result}
            row["eps"] = episodes / result["wall"]
            row["load"] = load()
            self.rows.append(row)
            print(
                f"{kind:7s} c={c:3d} rep={rep} {side:8s} n={episodes:4d} {row['eps']:.2f} eps/s, "
                f"{(row['machine_cpu_s'] - row['standin_cpu_s']) / episodes:.3f} CPU-s/ep, "
                f"rss {row['rss_mb']:.0f} MiB, threads {row['threads_max']}, "
                f"alive {row['alive_median']:.0f}/{row['alive_max']}, infra {row.get('infra')}",
                flush=True,
            )


def boxgym_details(tmp: Path, stdout: str) -> dict[str, Any]:
    """From a boxgym run's files: outcomes, the steady rate, step times, containers."""
    summary = json.loads(stdout[stdout.index("{") :]) if "{" in stdout else {}
    env = next(iter(summary.get("envs", {}).values()), {})
    events = tmp / "events.jsonl"
    lines = [json.loads(x) for x in events.read_text().splitlines()] if events.exists() else []
    steady = steady_rate(lines)
    steps = _steps(tmp / "runs.db")
    return {
        "episodes": env.get("episodes"),
        "infra": env.get("infra_error"),
        "steady_eps": steady,
        "container_counts": summary.get("containers", {}),
        "step_bash_s": statistics.median(steps["bash"]) if steps["bash"] else None,
        "step_submit_s": statistics.median(steps["submit"]) if steps["submit"] else None,
        "policy_s": statistics.median(steps["policy"]) if steps["policy"] else None,
    }


def _steps(db: Path) -> dict[str, list[float]]:
    out: dict[str, list[float]] = collections.defaultdict(list)
    if not db.exists():
        return out
    with sqlite3.connect(db) as conn:
        for tool, env_s, policy_s in conn.execute(
            "select tool, env_duration_s, policy_latency_s from steps"
        ):
            out[tool].append(env_s)
            out["policy"].append(policy_s)
    return out


# -- the report --------------------------------------------------------------------------


def _pick(
    rows: list[dict[str, Any]], kind: str, c: int, side: str = "boxgym"
) -> list[dict[str, Any]]:
    return [r for r in rows if (r["kind"], r["c"], r["side"]) == (kind, c, side)]


def _per_ep(rows: list[dict[str, Any]], key: str, less: str | None = None) -> float:
    values = [(r[key] - (r[less] if less else 0)) / r["n"] for r in rows if r.get(key) is not None]
    return statistics.median(values) if values else float("nan")


def _num(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.2f}"


def _ms(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{1000 * value:.0f}"


def latency_table(rows: list[dict[str, Any]], cs: list[int]) -> tuple[str, dict[int, float]]:
    lines = [
        "| c | episodes | episodes/s (median; each rep) | steady episodes/s | machine CPU-s "
        "per episode (runner / dockerd+containerd / containers / rest) | peak RSS MiB | runner threads "
        "| containers alive (median / max) | answer to result, ms (median / p90) "
        "| bash step, ms | requests open at once |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    best: dict[int, float] = {}
    for c in cs:
        rs = _pick(rows, "latency", c)
        if not rs:
            continue
        best[c] = eps = _median(rs, "eps")
        each = " ".join(f"{r['eps']:.2f}" for r in sorted(rs, key=lambda r: r["rep"]))
        machine_cpu = _per_ep(rs, "machine_cpu_s", "standin_cpu_s")
        runner, engine = _per_ep(rs, "runner_cpu_s"), _per_ep(rs, "engine_cpu_s")
        boxes = _per_ep(rs, "containers_cpu_s")
        rest = machine_cpu - runner - engine - boxes
        lines.append(
            f"| {c} | {rs[0]['n']} | **{eps:.2f}** ({each}) | {_num(_median(rs, 'steady_eps'))} "
            f"| {machine_cpu:.3f} ({runner:.3f} / {engine:.3f} / {boxes:.3f} / {rest:.3f}) "
            f"| {_median(rs, 'rss_mb'):.0f} | {_median(rs, 'threads_max'):.0f} "
            f"| {_median(rs, 'alive_median'):.0f} / {_median(rs, 'alive_max'):.0f} "
            f"| {_ms(_median(rs, 'gap_median_s'))} / {_ms(_median(rs, 'gap_p90_s'))} "
            f"| {_ms(_median(rs, 'step_bash_s'))} | {_median(rs, 'most_open'):.0f} |"
        )
    return "\n".join(lines), best


def zero_table(rows: list[dict[str, Any]]) -> tuple[str, float]:
    cs = sorted({r["c"] for r in rows if r["kind"] == "zero"})
    lines = [
        "| c | episodes | episodes/s (median; each rep) | machine CPU-s per episode |",
        "|---|---|---|---|",
    ]
    top = float("nan")
    for c in cs:
        rs = _pick(rows, "zero", c)
        eps = _median(rs, "eps")
        top = eps if math.isnan(top) else max(top, eps)
        each = " ".join(f"{r['eps']:.2f}" for r in sorted(rs, key=lambda r: r["rep"]))
        cpu = _per_ep(rs, "machine_cpu_s", "standin_cpu_s")
        lines.append(f"| {c} | {rs[0]['n']} | **{eps:.2f}** ({each}) | {cpu:.3f} |")
    return "\n".join(lines), top


def peer_table(rows: list[dict[str, Any]], cs: list[int]) -> str:
    lines = [
        "| c | episodes | boxgym episodes/s | agentbox-rl episodes/s | ratio | machine CPU-s per "
        "episode (boxgym / agentbox-rl) | peak RSS MiB (boxgym / agentbox-rl) "
        "| answer to result, ms median (boxgym / agentbox-rl) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in cs:
        b, a = _pick(rows, "latency", c), _pick(rows, "latency", c, "agentbox")
        if not a:
            continue
        eb, ea = _median(b, "eps"), _median(a, "eps")
        cb, ca = (
            _per_ep(b, "machine_cpu_s", "standin_cpu_s"),
            _per_ep(a, "machine_cpu_s", "standin_cpu_s"),
        )
        lines.append(
            f"| {c} | {a[0]['n']} | {eb:.2f} | {ea:.2f} | {eb / ea:.2f} | {cb:.3f} / {ca:.3f} "
            f"| {_median(b, 'rss_mb'):.0f} / {_median(a, 'rss_mb'):.0f} "
            f"| {_ms(_median(b, 'gap_median_s'))} / {_ms(_median(a, 'gap_median_s'))} |"
        )
    return "\n".join(lines) if len(lines) > 2 else ""


def standin_share(rows: list[dict[str, Any]]) -> str:
    cpu = sum(r["standin_cpu_s"] for r in rows)
    requests = sum(r["requests"] for r in rows)
    wall = sum(r["wall"] for r in rows)
    if not requests:
        return ""
    return (
        f"The stand-in server used {cpu:.1f} CPU-s for {requests} requests over {wall:.0f} s "
        f"of runs ({1000 * cpu / requests:.2f} ms a request, {cpu / wall:.1%} of one core): "
        "it is not what is measured."
    )


def report(rows: list[dict[str, Any]], opts: argparse.Namespace, loads: tuple[str, str]) -> str:
    cs = sorted({r["c"] for r in rows if r["kind"] == "latency"})
    text, best = latency_table(rows, cs)
    ztext, zero = zero_table(rows)
    verdicts = []
    if best:
        best_c = max(best, key=lambda c: best[c])
        for c in (256, 512):
            if c in best:
                ratio = best[c] / best[best_c]
                verdicts.append(
                    f"- c={c}: **{ratio:.3f}x** the best concurrency's episodes/s (c={best_c}; "
                    f"target >= 0.95x): {'met' if ratio >= 0.95 else 'NOT met'}."
                )
        if not math.isnan(zero):
            ratio = best[best_c] / zero
            verdicts.append(
                f"- the best (c={best_c}, {best[best_c]:.2f}) is **{ratio:.3f}x** the CPU-bound "
                f"throughput with a zero-latency server ({zero:.2f}; target >= 0.9x): "
                f"{'met' if ratio >= 0.9 else 'NOT met'}."
            )
    peers = peer_table(rows, cs)
    latency = next((r.get("latency") for r in rows if r.get("latency")), opts.latency)
    reps = max(r["rep"] for r in rows) + 1
    command = "python bench/latency.py " + (
        "--quick"
        if opts.quick
        else f"--latency {latency} --reps {reps} "
        f"--concurrency {','.join(map(str, cs))} --per-c {opts.per_c:g}"
    )
    peer_text = (
        f"agentbox-rl 0.3.0 through its own CLI against the same server (`agentbox run "
        f"--base-url ... --tools shell`: 4 `run_command` calls, then an answer without a call, "
        f"verified by pytest in its container), side by side:\n\n{peers}\n"
        if peers
        else "agentbox-rl: not run (`--peer-concurrency` empty).\n"
    )
    return f"""## The latency-bound regime: episodes waiting on a model server

Command: `{command}`
Machine: {machine()}; load average (1/5/15 min) {loads[0]} at the start, {loads[1]} at
the end.
{f"{chr(10)}{opts.note}{chr(10)}" if opts.note else ""}
`gym run boxgym/PyFunc-v0 --policy openai` against a stand-in OpenAI-compatible server
(bench/_standin.py, one asyncio process) that answers every request after {latency} s: 4
`bash` calls, then `submit`; each episode graded in a fresh container. Medians of {reps}
run(s) per concurrency, the concurrencies in turn (backwards every other rep); episodes/s
of the whole command, and steady (between its 10th and 90th percent of commits). CPU is
the whole machine's during the run less the stand-in's, split into the runner process
(its rusage), the engine daemons (dockerd, containerd), the containers' processes (the
engine's cgroup counter) and the rest (runc, the shims, anything else running). Containers alive are the engine's, sampled
every 0.25 s. "Answer to result" is measured by the server: from sending an answer with a
call to receiving the request that carries its result (the client's side of a step).

{text}

The same episodes with a zero-latency server (CPU-bound):

{ztext}

{chr(10).join(verdicts)}

{peer_text}
{standin_share(rows)}
"""


# -- the profile (Deliver 3) ----------------------------------------------------------------

GROUPS = {
    "runc": "runc",
    "containerd-shim": "containerd-shim",
    "containerd": "containerd",
    "dockerd": "dockerd",
    "python3": "container Python (keeper, grading)",
    "bash": "tool commands",
    "ls": "tool commands",
    "wc": "tool commands",
    "sh": "tool commands",
    "cat": "tool commands",
    "swapper": "idle",
}


def profile(opts: argparse.Namespace) -> None:
    """Run one batch per concurrency under perf (machine) and py-spy (runner); print the split."""
    work = Path(tempfile.mkdtemp(dir=opts.work))
    bench = Bench(work, opts, None)
    spy = Path(sys.executable).parent / "py-spy"
    with StandIn(opts.latency, CALLS) as server:
        for c in opts.profile:
            n = episodes_for(c, opts.per_c, opts.least)
            tmp = Path(tempfile.mkdtemp(dir=work))
            raw, data = tmp / "spy.txt", tmp / "perf.data"
            perf = ["perf", "record", "-q", "-e", "cpu-clock", "-F", str(HZ), "-a", "-o", str(data)]
            recorder = subprocess.Popen(perf, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.0)
            start, served = time.time(), server.cpu_s()
            runner = subprocess.Popen(
                bench.boxgym_cmd(server, c, n, tmp), cwd=ROOT, env=bench.env,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            )  # fmt: skip
            spying = None
            if spy.exists():
                spy_cmd = [str(spy), "record", "-r", "97", "--nonblocking", "-f", "raw"]
                spy_cmd += ["-o", str(raw), "--pid", str(runner.pid)]
                spying = subprocess.Popen(
                    spy_cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                )
            stdout, _ = runner.communicate()
            wall = time.time() - start
            recorder.send_signal(signal.SIGINT)
            recorder.wait()
            if spying is not None:
                spying.wait(timeout=60)
            episodes = boxgym_details(tmp, stdout)["episodes"] or n
            print(f"\nc={c}: {episodes} episodes in {wall:.1f} s, {episodes / wall:.2f} eps/s; "
                  f"stand-in {server.cpu_s() - served:.2f} CPU-s; load {load()}")  # fmt: skip
            print_perf(data, {runner.pid: "runner", server.pid: "stand-in server"}, episodes)
            if raw.exists():
                print_spy(raw, episodes)


HZ = 499


def print_perf(data: Path, known: dict[int, str], episodes: int) -> None:
    """The machine's CPU by process group (perf samples at 499 Hz)."""
    out = subprocess.run(
        ["perf", "script", "-i", str(data), "-F", "pid,comm"], capture_output=True, text=True
    ).stdout
    rows: collections.Counter[str] = collections.Counter()
    for line in out.splitlines():
        parts = line.rsplit(None, 1)  # perf prints the command, then the pid
        if len(parts) != 2:
            continue
        comm, pid = parts[0].strip(), parts[1]
        if pid.isdigit() and int(pid) in known:
            rows[known[int(pid)]] += 1
        elif comm.startswith("runc"):
            rows["runc"] += 1
        elif comm.startswith(("containerd-shim", "containerd-shi")):
            rows["containerd-shim"] += 1
        elif comm in ("perf", "py-spy"):
            rows["profilers"] += 1
        elif comm in ("python", "gym", "pytest", "pip"):
            rows["other Python processes on the machine (not this run's)"] += 1
        else:
            rows[GROUPS.get(comm, f"other: {comm}")] += 1
    busy = sum(v for k, v in rows.items() if k not in ("idle", "profilers"))
    for name, count in list(rows.items()):
        if name.startswith("other: ") and count < busy / 100:
            rows["other (each under 1%)"] += rows.pop(name)
    print("| component | CPU-s per episode | share of busy CPU |\n|---|---|---|")
    for name, count in rows.most_common():
        seconds = count / HZ / episodes
        share = f"{count / busy:.1%}" if name not in ("idle", "profilers") else "-"
        print(f"| {name} | {seconds:.3f} | {share} |")
    print(f"| busy (less profilers) | {busy / HZ / episodes:.3f} | 100% |")


SPY_GROUPS = [
    ("imports (start)", ("<frozen importlib",)),
    ("docker SDK: create/start/attach (requests)", ("docker/api", "docker/models")),
    ("policy HTTP (httpx)", ("httpx", "httpcore", "_openai.py")),
    ("store commit (sqlalchemy/sqlmodel)", ("sqlalchemy", "sqlmodel", "_store")),
    ("grading call", ("_grading",)),
    (
        "keeper link / sandbox",
        ("_sandbox/_link", "_sandbox/_keeper", "_sandbox/_shell", "_sandbox/_lazy"),
    ),
    ("warm pools", ("_sandbox/_pool",)),
    ("pydantic", ("pydantic",)),
    ("executor / runner", ("_run/",)),
]


def print_spy(raw: Path, episodes: int) -> None:
    """The runner's active samples by what the stack holds (the first group matched)."""
    groups: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        total += int(count)
        for name, marks in SPY_GROUPS:
            if any(m in stack for m in marks):
                groups[name] += int(count)
                break
        else:
            groups["other"] += int(count)
    print("\n| runner: what it was doing | share of its active samples |\n|---|---|")
    for name, count in groups.most_common():
        print(f"| {name} | {count / total:.1%} |")
    print(
        f"({total} samples at 97 Hz, {total / 97 / episodes:.3f} s of active threads per episode)"
    )


# -- waiting episodes (Deliver 2): what a thread per waiting episode costs -----------------

WAITER = """
import json, os, resource, sys, threading, time
import gym
from gym.policies import OpenAIPolicy

url, n, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
tools = [{"type": "function", "function": {"name": x, "parameters": {"type": "object"}}}
         for x in ("bash", "submit")]

def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

def episode():
    policy = OpenAIPolicy("standin", url)
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    for _ in range(rounds):
        turn = policy.act(messages, tools)
        messages.append(turn.message)
        for call in turn.calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": "ok"})
    policy.close()

base, t0 = rss(), time.process_time()
threads = [threading.Thread(target=episode, daemon=True) for _ in range(n)]
for t in threads:
    t.start()
time.sleep(1.0)
waiting = rss()
for t in threads:
    t.join()
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"n": n, "base_mb": base, "waiting_mb": waiting, "peak_mb": usage.ru_maxrss / 1024,
                  "cpu_s": time.process_time() - t0}))
"""


def waiting(opts: argparse.Namespace) -> None:
    """Episodes that only wait: ``n`` threads, each with its own `OpenAIPolicy` (as the
    local executor gives them), ``rounds`` requests each to a server answering after
    ``--latency`` seconds; the process's RSS while they wait and its CPU."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    results = []
    with StandIn(opts.latency, CALLS) as server:
        for n in opts.waiting:
            server.reset()
            served = server.cpu_s()
            cmd = [sys.executable, "-c", WAITER, server.url, str(n), str(CALLS + 1)]
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            row["standin_cpu_s"] = server.cpu_s() - served
            results.append(row)
            print(json.dumps(row), flush=True)
    lo, hi = results[0], results[-1]
    if hi["n"] > lo["n"]:
        per = (hi["waiting_mb"] - lo["waiting_mb"]) / (hi["n"] - lo["n"])
        peak = (hi["peak_mb"] - lo["peak_mb"]) / (hi["n"] - lo["n"])
        cpu = (hi["cpu_s"] - lo["cpu_s"]) / (hi["n"] - lo["n"])
        requests = CALLS + 1
        print(
            f"per extra waiting episode: {per:.3f} MiB of RSS while waiting, {peak:.3f} MiB "
            "of peak RSS, "
            f"{1000 * cpu / requests:.2f} ms of CPU per request ({requests} requests each)"
        )


# -- main ----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--latency", default="0.5", help="seconds per answer: 0.5, exp:0.5, uniform:0.2-0.8"
    )
    parser.add_argument("--concurrency", default="1,8,32,64,128,256,512")
    parser.add_argument("--zero-concurrency", default="8", help="the zero-latency reference's")
    parser.add_argument("--peer-concurrency", default="8,32", help="agentbox-rl's ('' for none)")
    parser.add_argument("--per-c", type=float, default=1.0, help="episodes per concurrency slot")
    parser.add_argument("--least", type=int, default=32, help="episodes a run has at least")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="c = 1, 8, 32, few episodes, 1 rep")
    parser.add_argument("--profile", default="", help="concurrencies to profile instead")
    parser.add_argument("--waiting", default="", help="thread counts: the waiting cost instead")
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "boxgym-bench")
    parser.add_argument("--no-write", action="store_true", help="print, leave the docs alone")
    parser.add_argument("--from-json", type=Path, help="report the rows of an earlier run")
    parser.add_argument("--note", default="", help="a paragraph on the conditions (load...)")
    opts = parser.parse_args()
    if opts.quick:
        opts.concurrency, opts.reps, opts.least, opts.per_c = "1,8,32", 1, 16, 1.0
        opts.peer_concurrency = "8"
    opts.cs = [int(c) for c in opts.concurrency.split(",")]
    opts.peer_cs = [int(c) for c in opts.peer_concurrency.split(",") if c]
    opts.zero_cs = [int(c) for c in opts.zero_concurrency.split(",") if c]
    opts.work.mkdir(parents=True, exist_ok=True)
    if opts.waiting:
        opts.waiting = [int(n) for n in opts.waiting.split(",")]
        waiting(opts)
        return
    if opts.profile:
        opts.profile = [int(c) for c in opts.profile.split(",")]
        profile(opts)
        return
    if opts.from_json:
        rows = json.loads(opts.from_json.read_text())
        finish(rows, opts, (rows[0].get("load_at_start", "?"), rows[-1].get("load", "?")))
        return
    rows = run_all(opts)
    finish(rows, opts, (rows[0]["load_at_start"], rows[-1]["load"]))


def run_all(opts: argparse.Namespace) -> list[dict[str, Any]]:
    agentbox = None
    if opts.peer_cs:
        agentbox = AgentBox(opts.work)
        agentbox.tasks = opts.work / "agentbox-tasks-latency"
        tasks = sorted(p.name for p in (ROOT / "seeds" / "pyfunc").iterdir() if p.is_dir())
        agentbox.prepare(ROOT / "seeds", tasks)
    bench = Bench(opts.work, opts, agentbox)
    start_load, began = load(), time.monotonic()
    with StandIn(opts.latency, CALLS) as server, StandIn("0", CALLS) as zero:
        for rep in range(opts.reps):
            order = opts.cs[:: 1 if rep % 2 == 0 else -1]
            for c in opts.zero_cs:
                bench.measure("zero", zero, c, rep)
            for c in order:
                bench.measure("latency", server, c, rep)
            rows = [{**r, "load_at_start": start_load, "latency": opts.latency} for r in bench.rows]
            (opts.work / "latency.json").write_text(json.dumps(rows, indent=1))
    print(f"all runs: {time.monotonic() - began:.0f} s", flush=True)
    return rows


def finish(rows: list[dict[str, Any]], opts: argparse.Namespace, loads: tuple[str, str]) -> None:
    body = report(rows, opts, loads)
    if not opts.no_write:
        write_section("latency", body)
    print(body)


if __name__ == "__main__":
    main()
