"""Shared helpers of the benchmarks: percentiles and docs/benchmarks.md sections."""

from __future__ import annotations

import platform
import re
import statistics
import subprocess
import time
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
HEADER = """# Benchmarks

Timings are machine-dependent: every figure below comes with the figures it is
compared to, measured side by side in the same run, and the command that produced
them. Re-run the command to refresh a section; the others are left as they are.
"""


def pct(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[max(0, min(98, int(q) - 1))]


def steady_rate(events: list[dict]) -> float | None:
    """Episodes/s between a run's 10th and 90th percent of commits (``--events`` lines):
    the rate without the command's start and its last episodes' tail; None under 10."""
    commits = sorted(e["t"] for e in events if e["event"] == "committed")
    if len(commits) < 10:
        return None
    first, last = len(commits) // 10, (len(commits) * 9) // 10
    lo, hi = commits[first], commits[last]
    return (last - first) / (hi - lo) if hi > lo else None


def timed(fn, n: int) -> list[float]:
    """Run fn n times; seconds per call."""
    out = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def machine() -> str:
    """One line describing the machine and engine."""
    try:
        engine = subprocess.run(
            ["docker", "version", "--format", "{{.Server.Version}}"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        engine = "?"
    cores = len(__import__("os").sched_getaffinity(0))
    system = f"{platform.system()} {platform.machine()}, {cores} cores"
    return f"{system}, Python {platform.python_version()}, Docker engine {engine}"


def write_section(name: str, body: str) -> None:
    """Replace (or add) the section ``name`` of docs/benchmarks.md."""
    text = DOC.read_text() if DOC.exists() else HEADER
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    block = f"{start}\n{body.strip()}\n{end}"
    if start in text:
        text = re.sub(re.escape(start) + r".*?" + re.escape(end), lambda _: block, text, flags=re.S)
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    DOC.write_text(text)
