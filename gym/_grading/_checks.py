"""Grading code tasks in a fresh container from the pristine image.

The grading container never held the agent. It receives the task's pristine files,
then the exported changes inside the allowed paths, then (only now) the hidden checks
and boxgym's grading script. The verdict is read from its JSON report (the grading
report) in a root-only directory created after all of that; never from exit codes or
printed text.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import marshal
import py_compile
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from gym._core._errors import GradingError
from gym._core._models import Component
from gym._grading._ast import parse_python
from gym._grading._export import Export
from gym._sandbox import SandboxConfig, SandboxProvider, check_name, run_once

__all__ = [
    "MEMORY_KILLS",
    "RUNNER_PATH",
    "CheckSpec",
    "Finding",
    "RunnerReport",
    "expected_tests",
    "grader_config",
    "run_checks",
]

RUNNER_PATH = Path(__file__).parent / "runner" / "boxgym_runner.py"
MEMORY_KILLS = RUNNER_PATH.parent / "boxgym_memory.py"
"""A standard-library module to ship beside a grading script of one's own: its
``Kills().by_the_host()`` says when a kill for want of memory in the grading container
was the host's (the container below its own limit), from the kernel's counters."""
_RUNNER = {  # the files shipped are the ones the hash was taken of
    p.name: p.read_bytes() for p in sorted(RUNNER_PATH.parent.glob("boxgym_*.py"))
}
RUNNER_HASH = hashlib.sha256(
    b"".join(name.encode() + b"\0" + data for name, data in _RUNNER.items())
).hexdigest()[:12]
_GRADE = "/grade"


class CheckSpec(BaseModel):
    """What the grading script is asked to check."""

    kind: str = "pytest"
    """``pytest`` (test files run by pytest) or ``calls`` (trusted checks, proxied calls)."""
    hidden: dict[str, bytes] = Field(default_factory=dict)
    """Hidden check files (relative name -> content), placed under /grade/tests."""
    visible_tests: tuple[str, ...] = ()
    """Visible test files in the workspace to run too (their pristine versions)."""
    python_paths: tuple[str, ...] = (".",)
    """Folders of the workspace put on sys.path for the code under test."""
    module: str = ""
    """calls: the workspace file holding the function under test."""
    entry: str = ""
    """calls: the name of the function under test."""
    tests: tuple[str, ...] = ()
    """calls: names of the check functions in the hidden file."""
    timeout: float = 120.0
    """Seconds the checks may run in total."""
    call_timeout: float = 10.0
    """Seconds one request to the code under test (a call, an import) may take."""
    frozen_time: float | None = None
    """Unix time the code under test sees as now (time.time, datetime.now), if any."""
    probes: tuple[dict[str, Any], ...] = ()
    """Named boolean probes: ``{name, command, timeout}``; a probe passes if it exits 0."""


class Finding(BaseModel):
    """One thing the checker saw the code under test do during the checks."""

    name: str
    """``early_exit``, ``always_equal``, ``report_forgery``, ``timeout``..."""
    detail: str = ""
    """What happened, in words."""
    test: str = ""
    """The test (or check) it happened in; ``collection`` while importing."""


class RunnerReport(BaseModel):
    """The grading report, as the grading script writes it into the root-only output directory."""

    runner: str
    version: str
    kind: str
    tests: dict[str, str] = Field(default_factory=dict)
    finished: bool = False
    worker_exit: int | None = None
    timed_out: bool = False
    error: str | None = None
    import_error: str | None = None
    forged_lines: int = 0
    """Lines on the report channel that were not outcomes (tampering)."""
    findings: list[Finding] = Field(default_factory=list)
    """What the checker saw the code under test do: ended its process, lied, hung..."""
    probes: dict[str, str] = Field(default_factory=dict)
    log: str = ""
    """The end of the checker's own output (pytest's summary), for people reading a report."""
    timings: dict[str, float] = Field(default_factory=dict)
    """Seconds from the session's start to its milestones (first worker, end)."""
    duration_s: float = 0.0


def grader_config(image: str, **settings: Any) -> SandboxConfig:
    """Settings of a grading container: root grading script with only SETUID/SETGID, no network."""
    base: dict[str, Any] = {
        "image": image,
        "main_user": "0:0",
        "exec_user": "0:0",
        "own_uid": False,
        "disposable": True,
        "cap_add": ("SETUID", "SETGID"),
        "tmpfs": {
            "/workspace": "size=256m,mode=0755",
            "/grade": "size=64m,mode=0755",
            "/tmp": "size=256m,mode=1777",
            "/home/agent": "size=16m,uid=1000,gid=1000,mode=0755",
        },
    }
    base.update(settings)
    return SandboxConfig(**base)


def expected_tests(files: dict[str, bytes], prefix: str) -> list[str]:
    """Test ids pytest will report for test files, found statically (module and class level)."""
    ids: list[str] = []
    for name, data in sorted(files.items()):
        if not name.endswith(".py"):
            continue
        tree = parse_python(data, filename=name)
        node_path = f"{prefix}/{name}".lstrip("/")
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
                "test"
            ):
                ids.append(f"{node_path}::{node.name}")
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                ids += [
                    f"{node_path}::{node.name}::{item.name}"
                    for item in node.body
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                    and item.name.startswith("test")
                ]
    return ids


def _bundle(base: dict[str, bytes], export: Export, spec: CheckSpec) -> bytes:
    """Everything the grading container needs, rooted at /: a marshalled dict.

    Path -> bytes, each name checked as an archive's is (never absolute, never climbing);
    None for a folder the agent made (``Export.folders``: made with the usual mode,
    nothing else of it carried). A workspace file where another file needs a folder
    (the agent replaced the visible tests' folder by a file, their pristine version
    restored) is left out, and so is a made folder where a file stands: the grading
    container could not write both, and the code's doing is never a grading crash.
    """
    files = export.applied_to(base)
    for rel in spec.visible_tests:  # tests always run in their pristine version
        if rel in base:
            files[rel] = base[rel]
    folders = {parent for rel in files for parent in _parents(rel)}
    written = {rel: data for rel, data in files.items() if rel not in folders}
    bundle: dict[str, bytes | None] = {f"workspace/{rel}": data for rel, data in written.items()}
    bundle |= {f"workspace/{rel}": None for rel in _made_folders(export, set(written))}
    bundle |= {f"grade/tests/{rel}": data for rel, data in spec.hidden.items()}
    bundle |= {f"grade/runner/{name}": data for name, data in _RUNNER.items()}
    bundle |= {f"grade/runner/{name}": data for name, data in _runner_bytecode().items()}
    bundle["grade/pytest.ini"] = b"[pytest]\n"
    bundle["grade/spec.json"] = json.dumps(_runner_spec(spec)).encode()
    return marshal.dumps({check_name(name): data for name, data in sorted(bundle.items())}, 4)


def _made_folders(export: Export, files: set[str]) -> list[str]:
    """The folders the agent made that the bundle makes: those where no written file stands."""
    return [
        rel
        for rel in export.folders
        if rel not in files and not any(parent in files for parent in _parents(rel))
    ]


def _parents(rel: str) -> list[str]:
    """The folders of a relative path (``a/b/c`` -> ``a``, ``a/b``)."""
    parts = rel.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _runner_bytecode() -> dict[str, bytes]:
    """The grading script's modules as shipped, compiled by this Python for a like container.

    Each file is named with this interpreter's cache tag (``__pycache__/boxgym_wire.
    cpython-311.pyc``) and carries its magic number: a container whose Python differs
    looks for another name, or rejects the magic, and compiles the source as before.
    Unchecked-hash files, each compiled from the very bytes shipped beside it: the
    sources are extracted with new times, and nothing in the container can change them
    (root-owned, written before any other process starts). Saves each grading the
    compiling of the grading script, checker and worker modules.
    """
    tag = sys.implementation.cache_tag
    if tag is None:
        return {}
    return {f"__pycache__/{n[:-3]}.{tag}.pyc": _compiled(n, data) for n, data in _RUNNER.items()}


@functools.lru_cache(maxsize=32)
def _compiled(name: str, source: bytes) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        path, target = Path(tmp) / name, Path(tmp) / f"{name}c"
        path.write_bytes(source)
        mode = py_compile.PycInvalidationMode.UNCHECKED_HASH
        py_compile.compile(str(path), str(target), f"{_GRADE}/runner/{name}", True, -1, mode)
        return target.read_bytes()


def _runner_spec(spec: CheckSpec) -> dict[str, Any]:
    paths = [f"/workspace/{p}".rstrip("/.") or "/workspace" for p in spec.python_paths]
    common = {
        "kind": spec.kind,
        "cwd": "/workspace",
        "python_paths": paths,
        "timeout": spec.timeout,
        "call_timeout": spec.call_timeout,
        "probes": list(spec.probes),
        "frozen_time": spec.frozen_time,
    }
    if spec.kind == "calls":
        check_file = next(iter(sorted(spec.hidden)))
        return {
            **common,
            "checks": f"{_GRADE}/tests/{check_file}",
            "module": f"/workspace/{spec.module}",
            "entry": spec.entry,
            "tests": list(spec.tests),
        }
    test_files = [f"{_GRADE}/tests/{n}" for n in sorted(spec.hidden) if n.endswith(".py")]
    test_files += [f"/workspace/{n}" for n in spec.visible_tests]
    return {**common, "config": f"{_GRADE}/pytest.ini", "rootdir": "/", "test_files": test_files}


_REPORT_MARK = "__BOXGYM_REPORT__"
_BOOT = f"""
import marshal, os, sys
os.umask(0o022)
for name, data in marshal.loads(sys.stdin.buffer.read()).items():
    path = "/" + name
    if data is None:  # a folder the agent made
        os.makedirs(path, exist_ok=True)
        continue
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with open(fd, "wb") as out:
        out.write(data)
os.chmod("/grade/tests", 0o700)
os.mkdir("/grade/out", 0o700)
sys.path.insert(0, "/grade/runner")
import boxgym_runner
try:
    boxgym_runner.main(["--spec", "/grade/spec.json", "--out", "/grade/out/report.json"])
except SystemExit:
    pass
with open("/grade/out/report.json") as report:
    sys.stdout.write("{_REPORT_MARK}\\n" + report.read())
"""
"""The grading container's main process (root): unpack, run the grading script, print its report.

One Python process does it all: no shell, no tar, no exec into the container. The bundle
is a marshalled dict (archive path -> bytes) built here: marshal is built into every
Python (importing tarfile cost each grading about 10 ms of CPU), and what the container
decodes was written by this process, never by the agent (its files are only values).
"""


def run_checks(
    image: str,
    base: dict[str, bytes],
    export: Export,
    spec: CheckSpec,
    *,
    sandboxes: SandboxProvider | None = None,
) -> RunnerReport:
    """Run the grading script in a fresh grading container, as its main process.

    The container (root with only SETUID/SETGID, no network, never used by the agent)
    unpacks the state and the checks streamed to it, creates the root-only report
    directory, runs the grading script, then prints the report file. Only root processes write
    to that output: the checker (which runs the checks) and the worker (the code under
    test) are other uids whose output never reaches it, and are killed before the
    report is read. ``sandboxes`` is the provider that runs the container (a one-shot
    hardened Docker container by default).

    Raises:
        GradingError: the grading script left no readable report, or reported its own crash.
        SandboxError: the grading container failed (the caller makes this infra_error).
    """
    probes = sum(float(p.get("timeout", 30)) for p in spec.probes)
    limit = spec.timeout + probes + 60  # a grading starved past it is ours
    once = sandboxes.run_once if sandboxes is not None else run_once
    result = once(
        grader_config(image),
        ["/usr/bin/python3", "-I", "-S", "-c", _BOOT],
        stdin=_bundle(base, export, spec),
        timeout=limit,
        max_output=16 << 20,
        run="grading",
    )
    if result.timed_out:
        raise GradingError(f"the grading runner did not finish in {limit:.0f}s")
    _, mark, raw = result.stdout.partition(_REPORT_MARK + "\n")
    if (not mark or not raw.strip()) and result.oom_killed:
        return _memory_killed(spec)
    if not mark or not raw.strip():
        raise GradingError(
            f"the grading container ended without a report (exit {result.exit_code}"
            f"{', out of memory' if result.oom_killed else ''}): {result.stderr[-500:]}"
        )
    report = read_report(raw)
    if report.error:
        raise GradingError(f"the grading runner could not grade: {report.error[-1500:]}")
    return report


def _memory_killed(spec: CheckSpec) -> RunnerReport:
    """The report of a grading whose main process the kernel killed at the memory limit.

    The code under test's: the grading's own processes keep within a bounded share of the
    container's memory, so what filled the rest is what the code made (its processes,
    or what it holds outside any process's resident memory, such as a memfd or files in
    a tmpfs, after lowering its OOM score so that the kernel chose the grading script).
    The kernel takes the largest process of a score first: a checker past its share
    would have been taken before the grading script, which then reports it as ours.
    No test reported: every check fails, with the ``resource_limit`` finding.
    """
    finding = Finding(
        name="resource_limit",
        detail="the kernel killed the grading's main process at the container's memory limit",
        test="session",
    )
    return RunnerReport(runner="host", version="", kind=spec.kind, findings=[finding])


def read_report(raw: str) -> RunnerReport:
    """The grading report, its texts made safe to store (no lone surrogate survives).

    The grading script writes texts that come from the code under test (messages, test ids);
    whatever they hold, they never make the report unreadable here.

    Raises:
        GradingError: the text is not a report (the grading script's own fault).
    """
    try:
        data = json.loads(raw)
        return RunnerReport.model_validate(_clean(data))
    except (ValueError, RecursionError) as exc:
        raise GradingError(f"the grading runner's report is unreadable: {exc}"[:500]) from exc


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    return value


def tests_component(report: RunnerReport, expected: Sequence[str], *, label: str) -> Component:
    """A gated component: every expected test present and passed (skipped counts as failed).

    Only a grading whose checks finished can pass it: a session that ran out of time
    after its last outcome was not seen to end, and what it left undone is unknown.
    """
    missing, failed, passed = [], [], 0
    for test_id in expected:
        outcomes = [
            o for t, o in report.tests.items() if t == test_id or t.startswith(test_id + "[")
        ]
        if not outcomes:
            missing.append(test_id)
        elif all(o == "passed" for o in outcomes):
            passed += 1
        else:
            failed.append(f"{test_id} ({'/'.join(sorted(set(outcomes)))})")
    total = max(len(expected), 1)
    ok = not missing and not failed and bool(expected) and report.finished
    parts = [f"{passed}/{len(expected)} {label} passed"]
    if failed:
        parts.append("failed: " + ", ".join(failed[:10]))
    if missing:
        why = " (the test process ended early)" if not report.finished else ""
        parts.append(f"missing{why}: " + ", ".join(missing[:10]))
    if not report.finished:
        parts.append("the checks did not finish" + (" in time" if report.timed_out else ""))
    if report.import_error:
        parts.append(f"solution failed to load: {report.import_error[:300]}")
    return Component(score=passed / total, passed=ok, explanation="; ".join(parts))
