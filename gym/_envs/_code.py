"""`CodeEnv`: container environments for code tasks (a project in /workspace)."""

from __future__ import annotations

import base64
import os
import posixpath
from collections.abc import Sequence
from typing import Any, ClassVar

from gym._core._errors import ConfigError
from gym._core._models import Task, TaskKeys, Verdict
from gym._core._tools import NulFree, ToolCall, tool
from gym._core._tree import read_tree
from gym._envs._changes import ChangedFile, Changes
from gym._envs._env import ContainerEnv, StepRecord, tool_calls
from gym._grading import Export, export_workspace, matches
from gym._grading._code import CodeTaskKeys, grade_code, workspace_files
from gym._grading._trajectory import protected_tests, workspace_rules
from gym._sandbox import Manifest, Sandbox, quote

__all__ = ["CodeEnv", "grade_code", "read_tree", "workspace_files"]


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
    task_keys: ClassVar[type[TaskKeys]] = CodeTaskKeys
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
        if result.timed_out:
            return (
                f"Error: could not write {path}: the write did not finish in "
                f"{self.command_timeout():g}s (the file may be incomplete; write it again)"
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

    def scripted_state(
        self, task: Task, calls: Sequence[ToolCall], untouched: Export | None = None
    ) -> Export | None:
        """The files written, when ``calls`` are ``write_file`` calls then ``submit``.

        ``write_file`` writes the whole text it is given, so the final state of such a
        script is its writes (the last one of each path), when each is a plain relative
        path the task allows and within the size the tool takes. None for any other
        script: it is played.
        """
        if not calls or calls[-1].name != "submit":
            return None
        files: dict[str, bytes] = {}
        for call in calls[:-1]:
            rel, text = call.arguments.get("path"), call.arguments.get("content")
            if call.name != "write_file" or not isinstance(rel, str) or not isinstance(text, str):
                return None
            files[rel] = text.encode()
        plain = all(
            rel == posixpath.normpath(rel)
            and not rel.startswith(("/", ".."))
            and matches(rel, task.allowed_paths)
            and len(data) <= self.max_file_bytes
            for rel, data in files.items()
        )
        return Export.written(files) if plain else None

    # -- grading -------------------------------------------------------------------------

    def export(self, task: Task, sandbox: Sandbox) -> Export:
        """Kill the agent's processes and export the changed files of the workspace.

        Symlinks resolve against the task's base tree as the host reads it from the task
        folder (``repo/``, what `setup` wrote into the workspace, ``.git`` aside).
        """
        base = workspace_files(task, with_git=False)
        return export_workspace(sandbox, task.allowed_paths, base=base)

    def grade(self, task: Task, final_state: Export, trajectory: Sequence[StepRecord]) -> Verdict:
        """Grade the exported final state in a fresh container (hidden checks, flags)."""
        return grade_code(
            task,
            final_state,
            self.image_digest,
            calls=tool_calls(trajectory),
            sandboxes=self.sandboxes,
        )

    def changes(self, task: Task, final_state: Export) -> Changes:
        """The changed files against the task's project, and the changes never exported."""
        base = workspace_files(task, with_git=False)
        files = [
            ChangedFile(path=path, before=base.get(path), after=data)
            for path, data in sorted(final_state.files.items())
        ]
        outside = [
            f"{c.kind} {c.path}"
            for c in final_state.changes
            if final_state.relative(c.path) not in final_state.files
        ]
        over = final_state.oversized
        note = "the changes were over the export cap: none were exported" if over else ""
        copied = [link for link in final_state.links if link in final_state.files]
        dropped = [link for link in final_state.links if link not in final_state.files]
        if copied:
            note += f" links graded as copies of their files: {', '.join(copied)}"
        if dropped:
            note += f" links not applied: {', '.join(dropped)}"
        return Changes(files=files, outside=outside, note=note.strip())

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
