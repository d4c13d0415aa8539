"""Throughput on one machine: boxgym against agentbox-rl 0.3.0, side by side in one run.

    python bench/scale.py [--episodes 32] [--reps 3] [--concurrency 1,2,4,8] [--work DIR]
    python bench/scale.py --from-json DIR/scale.json [same options]   # report saved rows

Two workloads, each at every concurrency, repeated ``--reps`` times and interleaved
(boxgym, agentbox, boxgym, agentbox...; the concurrencies in turn, backwards every other
rep), medians reported; a figure is the episodes per second of the whole command, start
to exit:

(a) no tool calls, graded: `gym run boxgym/PyFunc-v0 --policy noop` (grading in a fresh
    container) against `agentbox run --mock` on the same tasks (grading in the agent's
    container);
(b) ten shell tool calls, then graded: a scripted policy on each side making the same
    commands (`bash` on boxgym, `run_command` on agentbox).

From the same runs: (d) the runner's peak memory per concurrent episode and the time from
an episode's scheduling to its first step, and the containers each side started. Then the
engine's floor: the machine's CPU per bare container lifecycle, which bounds (b).
agentbox-rl is installed into its own venv under ``--work`` (never boxgym's), and its
image is built from the local debian:bookworm-slim. Writes docs/benchmarks.md (section
``scale``) and the raw figures to ``--work``/scale.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).parent))
from _agentbox import AgentBox  # noqa: E402
from _report import machine, steady_rate, write_section  # noqa: E402

CALLS = [f"echo step {i} && ls -la /workspace | wc -l" for i in range(10)]
GYM = [sys.executable, "-c", "import sys; from gym._cli import main; sys.argv[0] = 'gym'; main()"]


def timed(cmd: list[str], *, env: dict[str, str] | None = None, boxgym: bool) -> dict[str, Any]:
    """Run a command; its wall time, peak RSS (MiB), containers created, the whole
    machine's busy CPU-seconds meanwhile (the command, the engine, the containers) and
    its output."""
    creations = Creations()
    busy, start = _busy(), time.time()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        containers = creations.stop(owner_pid=proc.pid if boxgym else None)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.time() - start
        cpu = _busy() - busy
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])}... failed ({proc.returncode}):\n{stderr[-3000:]}")
    rss = usage.ru_maxrss / 1024
    return {"wall": wall, "rss_mb": rss, "stdout": stdout, "containers": containers, "cpu_s": cpu}


class Creations:
    """Counts container creations while a command runs (the engine's live event stream)."""

    def __init__(self) -> None:
        self.engine = docker.from_env()
        self.events = self.engine.events(
            filters={"type": "container", "event": "create"}, decode=True
        )
        self.seen: list[dict[str, str]] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            for event in self.events:
                self.seen.append(event.get("Actor", {}).get("Attributes", {}))
        except Exception:  # closed
            pass

    def stop(self, *, owner_pid: int | None = None) -> int:
        """Creations of boxgym's process ``owner_pid``, or of agentbox-rl (label agentbox=1)."""
        time.sleep(0.5)
        self.events.close()
        if owner_pid is None:
            return sum(a.get("agentbox") == "1" for a in self.seen)
        return sum(a.get("boxgym.owner", "::").split(":")[1] == str(owner_pid) for a in self.seen)


class Bench:
    """The runs, and what each measured."""

    def __init__(self, work: Path, episodes: int, agentbox: AgentBox) -> None:
        self.work = work
        self.episodes = episodes
        self.agentbox = agentbox
        self.env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.rows: list[dict[str, Any]] = []

    def boxgym(self, workload: str, c: int) -> dict[str, Any]:
        tmp = Path(tempfile.mkdtemp(dir=self.work))
        db, events = f"sqlite:///{tmp / 'runs.db'}", tmp / "events.jsonl"
        if workload == "a":
            cmd = [*GYM, "run", "boxgym/PyFunc-v0", "--policy", "noop", "--limit"]
            cmd += [str(self.episodes), "-c", str(c), "--db", db, "--events", str(events)]
            cmd += ["--json"]
        else:
            script = str(Path(__file__).parent / "_boxgym_scripted.py")
            cmd = [sys.executable, script, db, str(events), str(c), str(self.episodes)]
            cmd += [json.dumps(CALLS)]
        result = timed(cmd, env=self.env, boxgym=True)
        return {**result, **_boxgym_details(events, result)}

    def peer(self, workload: str, c: int) -> dict[str, Any]:
        out = Path(tempfile.mkdtemp(dir=self.work)) / "run"
        if workload == "a":
            cmd = self.agentbox.mock_command(c, out)
        else:
            cmd = self.agentbox.scripted_command(c, out, CALLS)
        result = timed(cmd, boxgym=False)
        trajectories = self.agentbox.results(out)
        ok = sum(t.get("final_status") in ("success", "failed") for t in trajectories)
        ready = [
            (t["metrics"].get("sandbox_create_s") or 0) + (t["metrics"].get("seed_s") or 0)
            for t in trajectories
        ]
        result["first_step_s"] = statistics.median(ready) if ready else None
        result["graded"] = ok
        return result

    def measure(self, workload: str, c: int, rep: int) -> None:
        for side in ("boxgym", "agentbox") if rep % 2 == 0 else ("agentbox", "boxgym"):
            run = self.boxgym if side == "boxgym" else self.peer
            result = run(workload, c)
            result.pop("stdout", None)
            row = {"workload": workload, "c": c, "rep": rep, "side": side, **result}
            row["eps"] = self.episodes / result["wall"]
            row["load"] = load()
            self.rows.append(row)
            print(
                f"({workload}) c={c} rep={rep} {side:8s} {row['eps']:.2f} eps/s, "
                f"rss {row['rss_mb']:.0f} MiB, containers {row.get('containers')}",
                flush=True,
            )


def _boxgym_details(events: Path, result: dict[str, Any]) -> dict[str, Any]:
    lines = [json.loads(x) for x in events.read_text().splitlines()] if events.exists() else []
    scheduled = {e["job"]: e["t"] for e in lines if e["event"] == "scheduled"}
    firsts = [
        e["first_step_at"] - scheduled[e["job"]]
        for e in lines
        if e["event"] == "committed" and "first_step_at" in e and e["job"] in scheduled
    ]
    counts: dict[str, int] = {}
    for line in result["stdout"].splitlines()[::-1]:
        if line.startswith("{") and '"containers"' in line:
            counts = json.loads(line)["containers"]
            break
    else:
        try:
            counts = json.loads(result["stdout"]).get("containers", {})
        except ValueError:
            counts = {}
    return {
        "first_step_s": statistics.median(firsts) if firsts else None,
        "steady_eps": steady_rate(lines),
        "container_counts": counts,
        "graded": sum(e["event"] == "committed" for e in lines),
    }


def engine_floor(n: int = 24, c: int = 4) -> dict[str, Any]:
    """CPU-seconds the whole machine spends per bare container lifecycle, nothing else.

    ``n`` containers of boxgym's python image with boxgym's hardening, command ``true``,
    ``c`` at once: create, start, exit, auto-remove. Every boxgym episode costs at least
    this per container it uses (one in (a), two in (b): the agent's and the grader's).
    Measured as boxgym creates them (its seccomp profile, no network sandbox of the engine, see
    gym/_sandbox/_netless.py) and, for comparison, with the engine's network sandbox.
    """
    from docker.models.containers import _create_container_args

    from gym._sandbox import SandboxConfig
    from gym._sandbox._images import ensure_image
    from gym._sandbox._netless import netless
    from gym._sandbox._seccomp import apply

    engine = docker.from_env()
    kwargs = SandboxConfig(image=ensure_image("python")).create_kwargs({}, ["true"])
    kwargs = apply(kwargs, engine)  # boxgym's seccomp profile, as start_linked gives it
    kwargs.pop("detach")
    kwargs["auto_remove"] = True

    def one(args: dict[str, Any]) -> None:
        args = _create_container_args({**args, "version": engine.api._version})
        cid = engine.api.create_container(**args)["Id"]
        url = engine.api._url("/containers/{0}/wait", cid)
        removed = engine.api._post(url, params={"condition": "removed"}, stream=True, timeout=60)
        engine.api.start(cid)
        removed.json()
        removed.close()

    boxgym, engine_net = _lifecycles(one, netless(kwargs), n, c), _lifecycles(one, kwargs, n, c)
    return {
        "workload": "floor",
        "side": "engine",
        "cpu_s": boxgym[0],
        "per_s": boxgym[1],
        "cpu_s_engine_network": engine_net[0],
        "n": n,
        "c": c,
        "load": load(),
    }


def _lifecycles(
    one: Callable[[dict[str, Any]], None], args: dict[str, Any], n: int, c: int
) -> tuple[float, float]:
    """(machine CPU-s per lifecycle, lifecycles per second) of ``n`` at ``c`` at once."""
    from concurrent.futures import ThreadPoolExecutor

    one(args)
    before, start = _busy(), time.monotonic()
    with ThreadPoolExecutor(c) as pool:
        list(pool.map(lambda _: one(args), range(n)))
    wall = time.monotonic() - start
    time.sleep(0.5)
    return (_busy() - before) / n, n / wall


def _busy() -> float:
    """CPU-seconds the whole machine has been busy (from /proc/stat)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:8]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def bound(rows: list[dict[str, Any]], cs: list[int], n: int) -> str:
    """What the machine allows (b), against what 2.5x the peer would need."""
    floor = next((r for r in rows if r["workload"] == "floor"), None)
    if floor is None or not any(r["workload"] == "b" for r in rows):
        return ""
    cores = len(os.sched_getaffinity(0))
    _, figures = table(rows, "b", cs, n)
    at = figures["at"]
    best_c = figures["best_c"]["boxgym"]
    per_episode, peer = at[("boxgym_cpu", best_c)], at[("agentbox_cpu", best_c)]
    need = TARGETS["b"] * figures["best"]["agentbox"]
    engine_net = ""
    if floor.get("cpu_s_engine_network"):
        engine_net = (
            f"; with the engine's own network sandbox, which boxgym does without, "
            f"{floor['cpu_s_engine_network']:.2f}"
        )
    return f"""
The engine's floor, measured in the same run: a bare container lifecycle of boxgym's
image and hardening (`true` as its command, {floor["n"]} of them, {floor["c"]} at once)
costs the machine **{floor["cpu_s"]:.2f} CPU-seconds** ({floor["per_s"]:.1f} containers/s){engine_net}.
An episode of (b) needs two containers (the agent's, and the fresh one it is graded in).
At boxgym's best concurrency (c={best_c}) a (b) episode cost the whole machine
**{per_episode:.2f} CPU-seconds** (its share of the command's start, both containers, the ten
calls, grading; agentbox-rl's {peer:.2f}, with one container and no separate grader), so
{cores} cores allow boxgym at most {cores / per_episode:.2f} episodes/s, against the {need:.2f}
that 2.5x agentbox-rl's best would take: an episode of at most {cores / need:.2f} CPU-seconds
with every core busy. Two container lifecycles are {2 * floor["cpu_s"]:.2f} of boxgym's.
Grading in the agent's container (as agentbox-rl does) would save one, reusing containers
or their namespaces across episodes most of one: boxgym does neither (a reward hack of
one episode must not reach the next, nor its grader). docs/scale.md shows where the rest
of the CPU goes.
"""


def _median(rows: list[dict[str, Any]], key: str) -> float:
    values = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(values) if values else float("nan")


def _pick(rows: list[dict[str, Any]], workload: str, c: int, side: str) -> list[dict[str, Any]]:
    return [r for r in rows if (r["workload"], r["c"], r["side"]) == (workload, c, side)]


def table(rows: list[dict[str, Any]], workload: str, cs: list[int], n: int) -> tuple[str, dict]:
    lines = [
        "| c | boxgym eps/s | agentbox eps/s | ratio | containers per episode (boxgym / agentbox) "
        "| machine CPU-s per episode (boxgym / agentbox) |",
        "|---|---|---|---|---|---|",
    ]
    at: dict[tuple[str, int], float] = {}
    for c in cs:
        b, a = _pick(rows, workload, c, "boxgym"), _pick(rows, workload, c, "agentbox")
        eb, ea = _median(b, "eps"), _median(a, "eps")
        at[("boxgym", c)], at[("agentbox", c)] = eb, ea
        cb, ca = _median(b, "containers") / n, _median(a, "containers") / n
        ub, ua = _median(b, "cpu_s") / n, _median(a, "cpu_s") / n
        at[("boxgym_cpu", c)], at[("agentbox_cpu", c)] = ub, ua
        lines.append(
            f"| {c} | {eb:.2f} | {ea:.2f} | {eb / ea:.2f} | {cb:.2f} / {ca:.2f} "
            f"| {ub:.2f} / {ua:.2f} |"
        )
    best_c = {side: max(cs, key=lambda c: at[(side, c)]) for side in ("boxgym", "agentbox")}
    best = {side: at[(side, c)] for side, c in best_c.items()}
    return "\n".join(lines), {"best": best, "best_c": best_c, "at": at}


def per_rep(
    rows: list[dict[str, Any]], workload: str, cs: list[int], best: dict[str, int]
) -> list[tuple[float, float]]:
    """Each rep on its own, at the concurrencies whose medians are best (``best``, by
    side): (boxgym against agentbox-rl, boxgym at the top concurrency against boxgym)."""
    figures = []
    for rep in sorted({r["rep"] for r in rows if r["workload"] == workload}):
        eps = {
            (r["side"], r["c"]): r["eps"]
            for r in rows
            if (r["workload"], r.get("rep")) == (workload, rep)
        }
        if len(eps) < 2 * len(cs):
            continue  # an unfinished rep
        top = eps[("boxgym", best["boxgym"])]
        figures.append((top / eps[("agentbox", best["agentbox"])], eps[("boxgym", max(cs))] / top))
    return figures


def spread(figures: list[tuple[float, float]], target: float, top: int) -> str:
    """One sentence on how single reps fall around the targets (the medians decide)."""
    if not figures:
        return ""
    ratios, cliffs = sorted(f[0] for f in figures), sorted(f[1] for f in figures)
    over = sum(r >= target for r in ratios)
    flat = sum(c >= 0.95 for c in cliffs)
    return (
        f" Single reps, paired at those concurrencies: {ratios[0]:.2f}-{ratios[-1]:.2f}x "
        f"({over} of {len(ratios)} at or over {target}x); at c={top} {cliffs[0]:.3f}-"
        f"{cliffs[-1]:.3f}x ({flat} of {len(cliffs)} at or over 0.95x)."
    )


def met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def floor_and_memory(
    rows: list[dict[str, Any]], cs: list[int], w: str, figures: dict[str, Any]
) -> list[str]:
    """Issue 33's other items for workload ``w`` (``figures``: its `table`'s): the
    engine-floor share, and the peak RSS at the top c."""
    lines = []
    floor = next((r for r in rows if r["workload"] == "floor"), None)
    if floor is not None:
        containers, target = FLOOR_TARGETS[w]
        rate = floor["per_s"] / containers
        share = figures["best"]["boxgym"] / rate
        steady = _median(_pick(rows, w, figures["best_c"]["boxgym"], "boxgym"), "steady_eps")
        also = (
            f" Steady (between the 10th and 90th percent of its commits, without the "
            f"command's start: the floor is a steady rate too): {steady:.2f} episodes/s, "
            f"{steady / rate:.3f}x."
            if not math.isnan(steady)  # rows saved before it was recorded have none
            else ""
        )
        lines.append(
            f"- ({w}) boxgym's best is **{share:.3f}x** the engine-floor rate for "
            f"{containers} container{'s' * (containers > 1)} an episode ({rate:.1f} "
            f"episodes/s; target >= {target}x): {met(share >= target)}.{also}"
        )
    ours, peer = (_median(_pick(rows, w, max(cs), s), "rss_mb") for s in ("boxgym", "agentbox"))
    lines.append(
        f"- ({w}) peak RSS at c={max(cs)}: boxgym {ours:.0f} MiB, agentbox-rl {peer:.0f} "
        f"(**{ours / peer:.2f}x**, target <= 1.0x): {met(ours <= peer)}."
    )
    return lines


def memory_and_first_step(rows: list[dict[str, Any]], cs: list[int], workloads: list[str]) -> str:
    lo, hi = min(cs), max(cs)
    lines = [
        f"| workload | side | peak RSS at c={lo} / c={hi} (MiB) | per extra concurrent episode "
        f"(MiB) | scheduled to first step, median (s) at c={lo} / c={hi} |",
        "|---|---|---|---|---|",
    ]
    for workload in workloads:
        for side in ("boxgym", "agentbox"):
            r_lo, r_hi = _pick(rows, workload, lo, side), _pick(rows, workload, hi, side)
            m_lo, m_hi = _median(r_lo, "rss_mb"), _median(r_hi, "rss_mb")
            per = (m_hi - m_lo) / (hi - lo) if hi > lo else float("nan")
            f_lo, f_hi = _median(r_lo, "first_step_s"), _median(r_hi, "first_step_s")
            lines.append(
                f"| ({workload}) | {side} | {m_lo:.0f} / {m_hi:.0f} | {per:.1f} "
                f"| {f_lo:.2f} / {f_hi:.2f} |"
            )
    return "\n".join(lines)


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f} / {five:.1f} / {fifteen:.1f}"


TITLES = {
    "a": "(a) No tool calls, then graded (`gym run --policy noop`; `agentbox run --mock`):",
    "b": "(b) Ten shell tool calls, then graded (the same commands, scripted on both sides):",
}
TARGETS = {"a": 2.5, "b": 2.5}
"""Issue 33: boxgym's best at least this many times agentbox-rl's best."""
FLOOR_TARGETS = {"a": (1, 0.5), "b": (2, 0.55)}
"""Issue 33: boxgym's best against the engine-floor rate over the containers an episode
needs (one in (a), two in (b)), at least this share of it."""


def report(rows: list[dict[str, Any]], opts: argparse.Namespace, loads: tuple[str, str]) -> str:
    cs, n = opts.concurrency, opts.episodes
    workloads = [w for w in ("a", "b") if any(r["workload"] == w for r in rows)]
    sections, verdicts, memory_lines = [], [], []
    for w in workloads:
        text, figures = table(rows, w, cs, n)
        sections.append(f"{TITLES[w]}\n\n{text}")
        ratio = figures["best"]["boxgym"] / figures["best"]["agentbox"]
        cliff = figures["at"][("boxgym", max(cs))] / figures["best"]["boxgym"]
        verdicts.append(
            f"- ({w}) boxgym's best is **{ratio:.2f}x** agentbox-rl's best (target >= "
            f"{TARGETS[w]}x): {met(ratio >= TARGETS[w])}; at c={max(cs)} boxgym runs at "
            f"**{cliff:.3f}x** its best (target >= 0.95x, no cliff): {met(cliff >= 0.95)}."
            + spread(per_rep(rows, w, cs, figures["best_c"]), TARGETS[w], max(cs))
        )
        memory_lines.extend(floor_and_memory(rows, cs, w, figures))
    verdicts.extend(memory_lines)
    args = f"--episodes {n} --reps {opts.reps} --concurrency {','.join(map(str, cs))}"
    tables = "\n\n".join(sections)
    return f"""## Throughput on one machine, against agentbox-rl 0.3.0

Command: `python bench/scale.py {args}`
Machine: {machine()}; load average (1/5/15 min) {loads[0]} at the start, {loads[1]} at
the end.

{n} PyFunc-v0 tasks per run; medians of {opts.reps} runs, boxgym and agentbox-rl
interleaved, the concurrencies in turn (backwards every other run); episodes per second
of the whole command. boxgym grades each episode in a
fresh container from the pristine image; agentbox-rl in the agent's own container.
{f"{chr(10)}{opts.note}{chr(10)}" if opts.note else ""}
{tables}

{chr(10).join(verdicts)}
{bound(rows, cs, n)}
(d) The runner's memory and the time from an episode's scheduling to its first step
(boxgym: from `--events`; agentbox-rl: sandbox create + seed, before its first call):

{memory_and_first_step(rows, cs, workloads)}

An episode without tool calls starts no agent container (its sandbox is lazy); grading
containers are started ahead, waiting for their input, by the same controller that keeps
the agent pool, and only as many as the episodes still to come need.
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--concurrency", default="1,2,4,8")
    parser.add_argument("--workloads", default="a,b")
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "boxgym-bench")
    parser.add_argument("--no-write", action="store_true", help="print, leave the docs alone")
    parser.add_argument("--from-json", type=Path, help="report the rows of an earlier run")
    parser.add_argument("--note", default="", help="a paragraph on the conditions (load...)")
    opts = parser.parse_args()
    opts.concurrency = [int(c) for c in opts.concurrency.split(",")]
    if opts.from_json:
        rows = json.loads(opts.from_json.read_text())
        if not any(r["workload"] == "floor" for r in rows):  # saved before it was measured
            rows.append({**engine_floor(), "load_at_start": rows[0].get("load_at_start")})
            save(opts.from_json.parent, rows)
        finish(rows, opts, ("(not recorded)", load()))
        return
    opts.work.mkdir(parents=True, exist_ok=True)
    tasks = sorted(p.name for p in (ROOT / "seeds" / "pyfunc").iterdir() if p.is_dir())
    if opts.episodes > len(tasks):  # a run is one episode per task: more would be counted, not run
        parser.error(f"--episodes: PyFunc-v0 has {len(tasks)} tasks, one episode each")
    agentbox = AgentBox(opts.work)
    agentbox.prepare(ROOT / "seeds", tasks[: opts.episodes])
    subprocess.run(
        [*GYM, "images", "build", "python"],
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
    )
    bench = Bench(opts.work, opts.episodes, agentbox)
    start_load = load()
    for workload in opts.workloads.split(","):
        for rep in range(opts.reps):
            # every other rep runs the concurrencies backwards: none always follows another
            for c in opts.concurrency[:: 1 if rep % 2 == 0 else -1]:
                bench.measure(workload, c, rep)
                save(opts.work, [{**r, "load_at_start": start_load} for r in bench.rows])
    bench.rows.append(engine_floor())
    save(opts.work, [{**r, "load_at_start": start_load} for r in bench.rows])
    finish(bench.rows, opts, (start_load, load()))


def save(work: Path, rows: list[dict[str, Any]]) -> None:
    (work / "scale.json").write_text(json.dumps(rows, indent=1))


def finish(rows: list[dict[str, Any]], opts: argparse.Namespace, loads: tuple[str, str]) -> None:
    """Print the report and write it into docs/benchmarks.md (unless ``--no-write``)."""
    if rows and "load_at_start" in rows[0] and loads[0] == "(not recorded)":
        loads = (rows[0]["load_at_start"], rows[-1].get("load", loads[1]))
    body = report(rows, opts, loads)
    if not opts.no_write:
        write_section("scale", body)
    print(body)


if __name__ == "__main__":
    main()
