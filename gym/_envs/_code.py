"""`CodeEnv`: container environments for code tasks (a project in /workspace)."""

from __future__ import annotations

import base64
import functools
import os
import posixpath
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from gym._core._errors import ConfigError, GradingError, SandboxError
from gym._core._git import one_commit
from gym._core._models import Component, Flag, Task, Verdict
from gym._core._tools import NulFree, ToolCall, tool
from gym._core._tree import read_tree
from gym._envs._env import ContainerEnv, StepRecord, tool_calls
from gym._grading import (
    RUNNER_HASH,
    CheckSpec,
    Export,
    Finding,
    Judge,
    RunnerReport,
    code_flags,
    command_flags,
    compose,
    expected_tests,
    export_workspace,
    file_component,
    loop_flags,
    matches,
    run_checks,
    tests_component,
    tool_flags,
    unified_diff,
)
from gym._grading._trajectory import protected_tests, workspace_rules
from gym._sandbox import Manifest, Sandbox, SandboxProvider, quote

__all__ = ["CodeEnv", "grade_code", "read_tree", "workspace_files"]

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


class CodeEnv(ContainerEnv[Export]):
    """A code task: a project in /workspace; tools bash, read_file, write_file, submit.

    The task folder under seeds/ holds ``repo/`` (the project at its base commit),
    ``hidden/`` (checks that only ever enter the grading container), ``oracle/``
    (reference files) and ``task.toml`` (prompt, split, tags, allowed_paths, grading).
    The final state is an `Export`: the changed files inside the allowed paths and the
    list of every change.
    """

    image: ClassVar[str] = "python"
    final_state_type: ClassVar[type[Export]] = Export
    max_file_bytes: ClassVar[int] = 1 << 20

    def sample_calls(self) -> list[dict[str, Any]]:
        """Side-effect-free calls for ``action_space.sample()``."""
        return [
            {"name": "bash", "arguments": {"command": "true"}},
            {"name": "bash", "arguments": {"command": "pwd"}},
        ]

    def prompt(self, task: Task) -> str:
        """The task's prompt, then the workspace's rules: what is graded, what is forbidden.

        The rules come from the task (``allowed_paths``, its visible tests and the test
        files of its repo) and are the ones its flags apply (docs/graders/trajectory.md).
        """
        base = workspace_files(task, with_git=False)
        visible = task.data.get("grading", {}).get("visible_tests", ())
        tests = protected_tests(base, visible)
        others = any(p not in tests and not matches(p, task.allowed_paths) for p in base)
        inside = any(matches(p, task.allowed_paths) for p in base)
        rules = workspace_rules(task.allowed_paths, tests, others=others, writable_files=inside)
        return f"{task.prompt.rstrip()}\n\n{rules}\n"

    def setup(self, task: Task, sandbox: Sandbox) -> None:
        """Write the task's project (with its base commit) into the fresh workspace."""
        files = workspace_files(task)
        workdir = sandbox.config.workdir
        if files:
            sandbox.put_files(workdir, files, via_shell=True)
        sandbox.baseline = Manifest.of_files(workdir, files)

    # -- tools ---------------------------------------------------------------------------

    @tool(kind="write")
    def bash(self, command: NulFree) -> str:
        """Run a bash command in the workspace; the shell keeps its directory and variables.

        Args:
            command: the command line to run.
        """
        sandbox = self._sandbox()
        result = sandbox.run(command, timeout=self.command_timeout(), max_output=self.max_output)
        self.note(result.exit_code, result.timed_out)
        parts = [result.stdout.rstrip("\n")] if result.stdout else []
        if result.stderr:
            parts.append("[stderr]\n" + result.stderr.rstrip("\n"))
        if result.timed_out:
            parts.append(
                f"[timed out after {result.duration_s:.0f}s; all its processes were killed]"
            )
        elif result.oom_killed:
            parts.append("[killed: out of memory]")
        if result.shell_restarted:
            parts.insert(0, "[the shell was restarted; variables were reset]")
        parts.append(f"[exit code: {result.exit_code if result.exit_code is not None else 'none'}]")
        return "\n".join(parts)

    @tool(kind="read")
    def read_file(self, path: NulFree) -> str:
        """Read a text file of the workspace.

        Args:
            path: path relative to the workspace (or absolute inside it).
        """
        target = self._workspace_path(path)
        data = self._sandbox().read_file(target, max_bytes=self.max_file_bytes)
        text = data.decode("utf-8", errors="replace")
        if len(text) > self.max_output:
            return (
                text[: self.max_output]
                + f"\n[... {len(text) - self.max_output} characters truncated]"
            )
        return text

    @tool(kind="write")
    def write_file(self, path: NulFree, content: str) -> str:
        """Create or overwrite a text file of the workspace (parent folders are created).

        Args:
            path: path relative to the workspace (or absolute inside it).
            content: the whole new content of the file.
        """  # written byte for byte as UTF-8: NUL and control characters included
        target = self._workspace_path(path)
        data = content.encode()
        if len(data) > self.max_file_bytes:
            raise ConfigError(f"content is {len(data)} bytes; the limit is {self.max_file_bytes}")
        payload = base64.b64encode(data).decode()
        folder = os.path.dirname(target)
        result = self._sandbox().run(
            f"mkdir -p -- {quote(folder)} && printf %s {payload} | base64 -d > {quote(target)}",
            timeout=self.command_timeout(),
        )
        if not result.ok:
            return f"Error: could not write {path}: {result.stderr.strip()[:500]}"
        return f"Wrote {len(data)} bytes to {path}"

    @tool(kind="final")
    def submit(self) -> str:
        """Submit the work and end the episode; it is then graded."""
        return ""

    # -- scripted solutions (validation) -----------------------------------------------

    def oracle_calls(self, task: Task) -> list[ToolCall]:
        """The reference solution as tool calls: write each file of oracle/, then submit."""
        files = read_tree(task.folder() / "oracle")
        if not files:
            raise ConfigError(f"task {task.id} has no oracle/ folder with the reference files")
        calls = [
            ToolCall(name="write_file", arguments={"path": rel, "content": data.decode()})
            for rel, data in sorted(files.items())
        ]
        calls += [
            ToolCall(name="bash", arguments={"command": f"rm -f -- {quote(rel)}"})
            for rel in task.data.get("oracle_delete", [])
        ]
        return [*calls, ToolCall(name="submit", arguments={})]

    def perturbed_calls(self, task: Task) -> list[ToolCall] | None:
        """The reference solution plus one change the task forbids (it must gate).

        A line appended to a file of the task outside its writable paths (a test when
        there is one); when every file of the task is writable, the first one moved to
        /tmp and replaced by a symbolic link to it (a link is never graded as a file).
        None when the task has no file.
        """
        base = sorted(workspace_files(task, with_git=False))
        tests = protected_tests(base, task.data.get("grading", {}).get("visible_tests", ()))
        outside = [p for p in (*tests, *base) if p in base and not matches(p, task.allowed_paths)]
        if outside:
            command = f"printf '\\n# boxgym: perturbed\\n' >> {quote(outside[0])}"
        elif base:
            moved = quote(f"/tmp/boxgym-perturbed-{posixpath.basename(base[0])}")
            command = f"mv -- {quote(base[0])} {moved} && ln -s {moved} {quote(base[0])}"
        else:
            return None
        calls = self.oracle_calls(task)
        return [*calls[:-1], ToolCall(name="bash", arguments={"command": command}), calls[-1]]

    def panel_calls(self, task: Task) -> dict[str, list[ToolCall]]:
        """Cheating policies that must fail (gym/_envs/_panel.py): liars, constants, echo, empty."""
        from gym._envs._panel import code_panel

        return code_panel(task)

    # -- grading -------------------------------------------------------------------------

    def export(self, task: Task, sandbox: Sandbox) -> Export:
        """Kill the agent's processes and export the changed files of the workspace."""
        return export_workspace(sandbox, task.allowed_paths)

    def grade(self, task: Task, final_state: Export, trajectory: Sequence[StepRecord]) -> Verdict:
        """Grade the exported final state in a fresh container (hidden checks, flags)."""
        return grade_code(
            task,
            final_state,
            self.image_digest,
            calls=tool_calls(trajectory),
            sandboxes=self.sandboxes,
        )

    def _sandbox(self) -> Sandbox:
        if self.sandbox is None:
            raise ConfigError("no episode is running: call reset() first")
        return self.sandbox

    def _workspace_path(self, path: str) -> str:
        root = self._sandbox().config.workdir
        target = os.path.normpath(os.path.join(root, path))
        if target != root and not target.startswith(root + "/"):
            raise ConfigError(f"{path!r} is outside the workspace {root}; use a path inside it")
        return target


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


_JUDGED = ("resource_limit", "early_exit", "report_forgery")
"""The judge's findings that become gating flags (what it saw the code under test do)."""
_EXPLAINED = ("not_plain",)
"""The judge's findings that become notes: why a check failed (it failed on its own)."""


def report_flags(report: RunnerReport) -> list[Flag]:
    """Flags from what the judge saw: an early exit, a lie, forged output, skipped tests.

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
    except GradingError as exc:
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
        GradingError: the judge failed after its retries or gave no parsable verdict.
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
