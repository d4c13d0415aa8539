"""Code grading: a code task's exported final state, graded in a fresh container.

`grade_code` is the whole verdict of a code task (the `CodeEnv` family, and `gym
regrade`): the hidden checks run by the trusted checker in a one-shot container from
the pristine image (`run_checks`), the trajectory flags (`code_flags`, `command_flags`,
`loop_flags`, `tool_flags`), what the checker saw the code under test do
(`report_flags`), the task's file checks and probes, and an optional LLM judge (a task's
``[judge]`` table). `workspace_files` is the workspace a task starts from: the grader's
base, and what `CodeEnv` writes into a fresh sandbox.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gym._core._errors import ConfigError, GradingError, SandboxError
from gym._core._git import one_commit
from gym._core._models import (
    Component,
    Flag,
    Task,
    TaskKeys,
    Verdict,
    check_task_keys,
)
from gym._core._tools import ToolCall
from gym._core._tree import read_tree, tree_names
from gym._grading._ast import parse_python
from gym._grading._checks import (
    RUNNER_HASH,
    CheckSpec,
    Finding,
    RunnerReport,
    expected_tests,
    run_checks,
    tests_component,
)
from gym._grading._diff import unified_diff
from gym._grading._export import Export
from gym._grading._files import FileCheck, file_component
from gym._grading._judge import Judge
from gym._grading._trajectory import (
    code_flags,
    command_flags,
    loop_flags,
    protected_tests,
    tool_flags,
)
from gym._grading._verdict import compose
from gym._sandbox import SandboxProvider

__all__ = [
    "GRADER",
    "GRADER_VERSION",
    "CodeTaskKeys",
    "grade_code",
    "report_flags",
    "workspace_files",
]

GRADER = "code-tests"
GRADER_VERSION = f"3+runner.{RUNNER_HASH}"
_GIT_WHO = "boxgym <tasks@boxgym.invalid>"
_GIT_WHEN = "1767225600 +0000"  # 2026-01-01T00:00:00Z: every task's base commit is the same


@functools.lru_cache(maxsize=512)
def _repo_with_git(task_path: str) -> tuple[tuple[str, bytes], ...]:
    """The task's repo/ plus a .git holding exactly one (base) commit, no reflog or hooks."""
    files = read_tree(Path(task_path) / "repo")
    git = one_commit(files, who=_GIT_WHO, when=_GIT_WHEN, message="base", branch="main")
    return tuple(sorted({**files, **git}.items()))


def workspace_files(task: Task, *, with_git: bool = True) -> dict[str, bytes]:
    """The workspace a task starts from (with its one-commit git history by default)."""
    if with_git and (task.folder() / "repo").is_dir():
        return dict(_repo_with_git(task.path))
    return read_tree(task.folder() / "repo")


def _epoch(value: Any) -> float | None:
    """A frozen clock from task.toml: a TOML datetime, an ISO string or Unix seconds."""
    import datetime as dt

    if value is None or value == "":
        return None
    if isinstance(value, int | float):
        return float(value)
    when = value if isinstance(value, dt.datetime) else dt.datetime.fromisoformat(str(value))
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.timestamp()


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class CodeGrading(_Strict):
    """A code task's ``[grading]`` table (see `CheckSpec` for what each key does)."""

    kind: Literal["pytest", "calls"] = "pytest"
    module: str = ""
    entry: str = ""
    tests: list[str] = Field(default_factory=list)
    visible_tests: list[str] = Field(default_factory=list)
    python_paths: list[str] = Field(default_factory=lambda: ["."])
    timeout: float = Field(default=120.0, gt=0)
    call_timeout: float = Field(default=10.0, gt=0)
    frozen_time: Any = None
    """A TOML datetime, an ISO 8601 string or Unix seconds."""

    @field_validator("frozen_time")
    @classmethod
    def _clock(cls, value: Any) -> Any:
        try:
            _epoch(value)
        except (TypeError, ValueError):
            raise ValueError("not a TOML datetime, an ISO 8601 string or Unix seconds") from None
        return value

    @model_validator(mode="after")
    def _calls(self) -> CodeGrading:
        if self.kind == "calls" and not (self.module and self.entry and self.tests):
            raise ValueError("kind = 'calls' needs module, entry and tests (the check names)")
        return self


class Probe(_Strict):
    """A ``[[probes]]`` entry: a command run in the grading container, passing if it exits 0."""

    name: str = Field(min_length=1)
    command: str = Field(min_length=1)
    timeout: float = Field(default=30.0, gt=0)


class ForbiddenArgument(_Strict):
    """A ``[[forbidden_arguments]]`` entry: a regex searched in a call's JSON arguments."""

    tool: str = ""
    """The tool it applies to (every tool when absent)."""
    pattern: str

    @field_validator("pattern")
    @classmethod
    def _regex(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        return value


class JudgeTable(_Strict):
    """A task's ``[judge]`` table (see `Judge`)."""

    rubric: str = ""
    weight: float = 1.0
    threshold: float = 0.5
    gated: bool = False


class CodeTaskKeys(TaskKeys):
    """The task.toml keys of a code task (`gym.CodeEnv` and the families built on it)."""

    grading: CodeGrading = Field(default_factory=CodeGrading)
    probes: list[Probe] = Field(default_factory=list)
    forbidden_tools: list[str] = Field(default_factory=list)
    forbidden_arguments: list[ForbiddenArgument] = Field(default_factory=list)
    judge: JudgeTable | None = None
    files: list[FileCheck] = Field(default_factory=list)
    oracle_delete: list[str] = Field(default_factory=list)
    """Files of repo/ the reference solution deletes."""

    @model_validator(mode="after")
    def _probe_names(self) -> CodeTaskKeys:
        names = [p.name for p in self.probes]
        if twice := sorted({n for n in names if names.count(n) > 1}):
            raise ValueError(f"probes: {twice} named more than once; name each probe once")
        return self

    def folder_problems(self, folder: Path) -> list[str]:
        """The visible tests against repo/, a ``calls`` task's check names against its checks.

        A visible test that is no file of repo/ would never run. The checks file (the
        first hidden file, as the grading script takes it) is read, never imported: a
        ``check_*`` function that ``tests`` does not list would never run, and a listed
        name it does not define could never pass.
        """
        repo = folder / "repo"
        problems = [
            f"grading.visible_tests names {rel!r}, which is no file of repo/"
            for rel in self.grading.visible_tests
            if not (repo / rel).is_file()
        ]
        if self.grading.kind != "calls":
            return problems
        hidden = folder / "hidden"
        names = tree_names(hidden)  # as grading reads it: no __pycache__
        if not names:
            return [*problems, "grading.kind = 'calls' but hidden/ holds no checks file"]
        file = hidden / names[0]
        stat = file.stat()
        try:
            defined, bound = _check_names(str(file), stat.st_mtime_ns, stat.st_size)
        except (SyntaxError, ValueError, UnicodeDecodeError) as exc:
            return [*problems, f"hidden/{names[0]} is not valid Python: {exc}"]
        listed = set(self.grading.tests)
        if unlisted := sorted(n for n in defined if n.startswith("check_") and n not in listed):
            problems.append(
                f"hidden/{names[0]} defines {unlisted}, which grading.tests does not list: "
                "list each check, or rename a helper so it does not start with 'check_'"
            )
        if missing := sorted(listed - bound):
            problems.append(
                f"grading.tests = {self.grading.tests!r} names {missing}, which "
                f"hidden/{names[0]} does not define"
            )
        return problems


@functools.lru_cache(maxsize=4096)
def _check_names(path: str, mtime_ns: int, size: int) -> tuple[frozenset[str], frozenset[str]]:
    """(functions defined, every name bound) at the top level of a checks file."""
    tree = parse_python(Path(path).read_bytes(), filename=path)
    defined, bound = set(), set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            defined.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ClassDef):
            bound.add(node.name)
        else:
            bound |= {
                n.id
                for n in ast.walk(node)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            }
    return frozenset(defined), frozenset(defined | bound)


_JUDGED = ("resource_limit", "early_exit", "report_forgery")
"""The checker's findings that become gating flags (what it saw the code under test do)."""
_EXPLAINED = ("not_plain",)
"""The checker's findings that become notes: why a check failed (it failed on its own)."""


def report_flags(report: RunnerReport) -> list[Flag]:
    """Flags from what the checker saw: an early exit, a lie, forged output, skipped tests.

    Only structured findings and the report's own fields are read, never the text of an
    error message (the code under test writes those).
    """
    flags = []
    seen: dict[str, Finding] = {}
    for finding in report.findings:
        seen.setdefault(finding.name, finding)
    for name in _JUDGED:
        if found := seen.get(name):
            detail = found.detail if name == "report_forgery" else f"{found.detail} ({found.test})"
            flags.append(Flag(name=name, detail=detail[:200]))
    for name in _EXPLAINED:
        if found := seen.get(name):
            detail = f"{found.detail} ({found.test})"[:200]
            flags.append(Flag(name=name, detail=detail, gating=False))
    if "early_exit" not in seen and not report.finished and not report.timed_out:
        flags.append(Flag(name="early_exit", detail=f"worker exit {report.worker_exit}"))
    if report.forged_lines and "report_forgery" not in seen:
        detail = f"{report.forged_lines} lines that were not outcomes"
        flags.append(Flag(name="report_forgery", detail=detail))
    skipped = sorted(t for t, o in report.tests.items() if o == "skipped")
    if skipped:
        flags.append(Flag(name="tests_skipped", detail=", ".join(skipped[:5])))
    return flags


def grade_code(
    task: Task,
    export: Export,
    image: str,
    *,
    calls: Sequence[ToolCall] = (),
    sandboxes: SandboxProvider | None = None,
) -> Verdict:
    """Grade a code task's exported final state (also used by regrade).

    Args:
        task: the task.
        export: its exported final state.
        image: the image (reference or digest) the grading container starts from.
        calls: the episode's tool calls, for the trajectory graders.
        sandboxes: where the grading container runs (hardened Docker by default).
    """
    read = {k: v for k, v in task.data.items() if k in CodeTaskKeys.model_fields}
    check_task_keys(task.folder() / "task.toml", read, CodeTaskKeys)  # what it reads, checked
    grading = dict(task.data.get("grading", {}))
    hidden = read_tree(task.folder() / "hidden")
    if not hidden:
        raise ConfigError(f"task {task.id} has no hidden checks in {task.folder() / 'hidden'}")
    base = workspace_files(task, with_git=False)
    visible = tuple(sorted(grading.get("visible_tests", ())))
    spec = CheckSpec(
        kind=grading.get("kind", "pytest"),
        hidden=hidden,
        visible_tests=visible,
        python_paths=tuple(grading.get("python_paths", ["."])),
        module=grading.get("module", ""),
        entry=grading.get("entry", ""),
        tests=tuple(grading.get("tests", ())),
        timeout=float(grading.get("timeout", 120)),
        call_timeout=float(grading.get("call_timeout", 10)),
        probes=tuple(task.data.get("probes", ())),
        frozen_time=_epoch(grading.get("frozen_time")),
    )
    flags = code_flags(
        export,
        task.allowed_paths,
        hidden_names=hidden,
        roots=spec.python_paths,
        base=base,
        tests=protected_tests(base, visible),
    )
    flags += command_flags(list(calls)) + loop_flags(list(calls))
    flags += tool_flags(
        list(calls), task.data.get("forbidden_tools", ()), task.data.get("forbidden_arguments", ())
    )
    try:
        report = run_checks(image, base, export, spec, sandboxes=sandboxes)
    except (SandboxError, GradingError) as exc:
        return Verdict.infra(f"grading failed: {exc}", grader=GRADER, grader_version=GRADER_VERSION)
    flags += report_flags(report)
    components: dict[str, Component] = {}
    if spec.kind == "calls":
        components["hidden_tests"] = tests_component(
            report, list(spec.tests), label="hidden checks"
        )
    else:
        components["hidden_tests"] = tests_component(
            report, expected_tests(hidden, "grade/tests"), label="hidden tests"
        )
        if visible:
            vis = {k: base[k] for k in visible if k in base}
            components["visible_tests"] = tests_component(
                report, expected_tests(vis, "workspace"), label="visible tests"
            )
    components.update(_state_components(task, base, export, report))
    verdict = compose(components, flags, grader=GRADER, version=GRADER_VERSION)
    if "judge" not in task.data:
        return verdict
    try:  # a judge could not turn a fail into a pass: it is only asked about passes
        judged = _judge_component(task, export, ask=verdict.outcome == "pass")
    except GradingError as exc:  # the judge's own failure: its control case failed too
        return Verdict.infra(f"judge failed: {exc}", grader=GRADER, grader_version=GRADER_VERSION)
    if isinstance(judged, str):
        verdict.reason += f"; {judged}"
        return verdict
    version, component = judged
    components["judge"] = component
    return compose(components, flags, grader=GRADER, version=f"{GRADER_VERSION}+judge.{version}")


# -- optional LLM judge (a task's [judge] table) ------------------------------------------

_JUDGE_KEYS = {"rubric", "weight", "threshold", "gated"}


def _judge_component(
    task: Task, export: Export, *, ask: bool = True
) -> tuple[str, Component] | str:
    """(judge version, ``judge`` component) for a task declaring ``[judge]``, or why none.

    The judge reads the task prompt and the unified diff of the exported (allowed) files
    against the task's repo. Its endpoint comes from ``GYM_JUDGE_BASE_URL`` and
    ``GYM_JUDGE_MODEL``; the task's table gives rubric, weight, threshold and gated
    (false by default). With no judge configured there is no component, only a note.

    Raises:
        ConfigError: the [judge] table has unknown keys or bad values.
        GradingError: the judge failed after its retries, or gave no verdict on the diff
            nor on its control case (no verdict on the diff alone is the diff's failing
            component, `Judge.score`).
    """
    table = task.data["judge"]
    if not isinstance(table, dict) or set(table) - _JUDGE_KEYS:
        raise ConfigError(f"task {task.id}: [judge] may only set {sorted(_JUDGE_KEYS)}")
    judge = Judge.from_env(**table)
    if judge is None:
        return "a judge is declared but none is configured (GYM_JUDGE_BASE_URL, GYM_JUDGE_MODEL)"
    if not ask:
        return "the judge was not asked (the episode failed before it)"
    diff = unified_diff(workspace_files(task, with_git=False), export.files) or "(no changes)"
    with judge:
        return judge.version, judge.score(task.prompt, diff)


def _state_components(
    task: Task, base: dict[str, bytes], export: Export, report: RunnerReport
) -> dict[str, Component]:
    """File checks and named probes a task declares (``[[files]]``, ``[[probes]]``)."""
    out: dict[str, Component] = {}
    if entries := task.data.get("files"):
        out["files"] = file_component(list(entries), export.applied_to(base))
    for probe in task.data.get("probes", ()):
        result = report.probes.get(probe["name"], "missing")
        out[f"probe:{probe['name']}"] = Component(
            score=float(result == "passed"),
            passed=result == "passed",
            explanation=f"probe {probe['name']!r}: {result}",
        )
    return out
