"""Shell: answer a question about, or change, a tree of files with bash (see README.md)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, ValidationError

import gym
import gym.authoring
import gym.errors
import gym.grading
import gym.sandbox

__all__ = ["GRADER", "GRADER_VERSION", "ShellEnv", "ShellExport", "ShellSpec"]

GRADER = "shell-replay"
_SOURCE = Path(__file__).read_bytes() + gym.grading.REPLAY_VERSION.encode()
GRADER_VERSION = "1+" + hashlib.sha256(_SOURCE).hexdigest()[:12]
"""This module's and the gold replay's version: a change of either is a new grader."""
MAX_ANSWER = 1 << 20
"""Characters of a submitted answer kept (more is cut, and cannot equal a shorter output)."""
PERTURBED = "boxgym-perturbed.txt"
"""The file the perturbed oracle leaves in the workspace (a change the gold never makes)."""
WORKSPACE_TMPFS = "size=256m,uid={uid},gid={uid},mode=0755"
"""A grading container's workspace mount, for the uid its gold runs as (``uid``)."""

RULES_OUTPUT = (
    "When you have the answer, call `submit` with `answer` set to exactly the output the "
    "task asks for, as a command would print it (it is compared line by line with the "
    "expected output; spaces at the ends of lines, runs of spaces and empty lines at the "
    "start and end do not count)."
)
RULES_FILES = (
    "When the files are as the task asks, call `submit`. The final files {where} are "
    "compared with the expected ones: names, types, permission bits and contents."
)
RULES_COMMON = (
    "The task's files are in /workspace, your working directory. Change nothing there "
    "that the task does not ask you to change, and leave no file of your own behind: use "
    "/tmp for scratch work."
)


class ShellSpec(BaseModel):
    """What grading needs to know about a shell task (task.toml and hidden/gold.sh)."""

    gold: str = Field(min_length=1)
    """The gold command: bash source run in /workspace (hidden/gold.sh)."""
    compare: tuple[Literal["output", "files"], ...] = Field(default=("output",), min_length=1)
    """What is compared with the gold's: its standard output (the submitted answer), the
    final files, or both."""
    paths: tuple[str, ...] = ()
    """Globs (relative to /workspace) the files comparison is limited to; all when empty."""
    gold_timeout: float = Field(default=60.0, gt=0, le=600)
    """Seconds the gold command may run."""

    @classmethod
    def of(cls, task: gym.Task) -> ShellSpec:
        """The spec of a task.

        Raises:
            ConfigError: no hidden/gold.sh, or a field of task.toml is wrong.
        """
        gold_file = task.folder() / "hidden" / "gold.sh"
        if not gold_file.is_file():
            raise gym.ConfigError(f"task {task.id} has no hidden/gold.sh (its gold command)")
        data = task.data
        try:
            return cls(
                gold=gold_file.read_text(),
                compare=tuple(data.get("compare", ("output",))),
                paths=tuple(data.get("paths", ())),
                gold_timeout=data.get("gold_timeout", 60.0),
            )
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise gym.ConfigError(
                f"task {task.id}: {where} = {err.get('input')!r}: {err['msg']} "
                "(compare is a list of 'output' and 'files'; see environments/shell/README.md)"
            ) from None


class ShellKeys(gym.authoring.TaskKeys):
    """A shell task's task.toml keys (`ShellSpec` says what each does)."""

    compare: list[Literal["output", "files"]] = Field(
        default_factory=lambda: ["output"], min_length=1
    )
    paths: list[str] = Field(default_factory=list)
    gold_timeout: float = Field(default=60.0, gt=0, le=600)


class ShellExport(BaseModel):
    """The final state of a shell episode: the submitted answer and the workspace's tree."""

    answer: str = ""
    """The answer passed to submit (cut at `MAX_ANSWER` characters)."""
    tree: gym.grading.FileTree | None = None
    """The manifest of /workspace once the agent's processes were gone."""
    problem: str = ""
    """Why the workspace could not be read, when the agent caused it (too many files)."""


class ShellEnv(gym.ContainerEnv[ShellExport]):
    """A tree of files in /workspace and a task about it; tools ``bash`` and ``submit``.

    A task holds a prompt, its initial files (``files/``, copied into the workspace with
    their modes and modification times), a gold command (``hidden/gold.sh``) and what is
    compared (``compare``: ``output``, ``files`` or both). Grading replays the gold
    command in a fresh grading container from the same files and compares, in this
    process: the submitted answer with the gold's standard output, and the workspace's
    final manifest with the gold's (path, type, mode, size, sha256; contents as lines,
    new entries' default modes may be narrower: environments/shell/README.md). Whatever the agent
    changed in the workspace that the gold left as it was is flagged
    (``unexpected_change``, gating).
    """

    family: ClassVar[str] = "shell"
    task_keys: ClassVar[type[gym.authoring.TaskKeys]] = ShellKeys
    image: ClassVar[str] = "shell"
    final_state_type: ClassVar[type[ShellExport]] = ShellExport

    # The code families' bash tool: the persistent shell, its output, exit code and limits.
    bash = gym.CodeEnv.bash

    def sample_calls(self) -> list[dict[str, Any]]:
        """Side-effect-free calls for ``action_space.sample()``."""
        return [
            {"name": "bash", "arguments": {"command": "ls"}},
            {"name": "bash", "arguments": {"command": "pwd"}},
        ]

    def prompt(self, task: gym.Task) -> str:
        """The task, then what is compared and the workspace's rules."""
        spec = ShellSpec.of(task)
        parts = [task.prompt.rstrip(), RULES_COMMON]
        if "files" in spec.compare:
            where = f"under {', '.join(spec.paths)}" if spec.paths else "in /workspace"
            parts.append(RULES_FILES.format(where=where))
        if "output" in spec.compare:
            parts.append(RULES_OUTPUT)
        return "\n\n".join(parts) + "\n"

    def setup(self, task: gym.Task, sandbox: gym.sandbox.Sandbox) -> None:
        """Copy the task's files into the fresh workspace, keeping modes and mtimes."""
        gym.grading.put_tree(sandbox, sandbox.config.workdir, self._archive(task))

    @gym.tool(kind="final")
    def submit(self, answer: str = "") -> str:
        """Finish the task; it is then graded.

        Args:
            answer: the output the task asks for, when it asks a question (leave it empty
                for a task that only asks to change files).
        """
        return ""

    def _sandbox(self) -> gym.sandbox.Sandbox:
        if self.sandbox is None:
            raise gym.ConfigError("no episode is running: call reset() first")
        return self.sandbox

    # -- scripted solutions (validation) -----------------------------------------------

    def oracle_calls(self, task: gym.Task) -> list[gym.ToolCall]:
        """The gold command through bash, then its output (from the gold replay) submitted."""
        spec = ShellSpec.of(task)
        stdout = self.replay(task).stdout
        return [
            gym.ToolCall(name="bash", arguments={"command": spec.gold}),
            gym.ToolCall(name="submit", arguments={"answer": stdout}),
        ]

    def perturbed_calls(self, task: gym.Task) -> list[gym.ToolCall]:
        """The oracle plus a file of its own left in the workspace (it must be flagged)."""
        calls = self.oracle_calls(task)
        leave = f"printf 'boxgym: perturbed\\n' > {PERTURBED}"
        return [*calls[:-1], gym.ToolCall(name="bash", arguments={"command": leave}), calls[-1]]

    def panel_calls(self, task: gym.Task) -> dict[str, list[gym.ToolCall]]:
        """Policies that do none of the work, which must all fail.

        ``empty``: submit an empty answer. ``ls``: list the workspace, then submit that
        listing (the names ``ls`` prints) as the answer.
        """
        names = sorted(
            {p.split("/")[0] for p in self.replay(task).initial.nodes if not p.startswith(".")},
            key=lambda n: n.encode(),
        )
        return {
            "empty": [gym.ToolCall(name="submit", arguments={"answer": ""})],
            "ls": [
                gym.ToolCall(name="bash", arguments={"command": "ls"}),
                gym.ToolCall(name="submit", arguments={"answer": "\n".join(names)}),
            ],
        }

    # -- grading -------------------------------------------------------------------------

    def export(self, task: gym.Task, sandbox: gym.sandbox.Sandbox) -> ShellExport:
        """Kill the agent's processes, then read the workspace's manifest and the answer."""
        answer = self._answer()
        try:
            sandbox.final_diff()  # every process of the agent killed: nothing changes now
        except gym.errors.ExportTooLarge as exc:
            return ShellExport(answer=answer, problem=str(exc))
        tree = gym.grading.read_file_tree(sandbox, sandbox.config.workdir)
        return ShellExport(answer=answer, tree=tree)

    def grade(
        self, task: gym.Task, final_state: ShellExport, trajectory: Sequence[gym.StepRecord]
    ) -> gym.Verdict:
        """Compare the answer and the files with the gold's, replayed in a fresh container."""
        spec = ShellSpec.of(task)
        try:
            gold = self.replay(task)
        except (gym.SandboxError, gym.GradingError) as exc:
            return gym.Verdict.infra(
                f"replaying the gold command failed: {exc}",
                grader=GRADER,
                grader_version=GRADER_VERSION,
            )
        tree = final_state.tree
        if tree is None or tree.over:  # unlisted: no comparison and no flag could be made
            why = final_state.problem or "the workspace was not read"
            if tree is not None:
                why = f"the workspace is over the manifest's bounds ({tree.over}): not compared"
            failed = gym.Component(score=0.0, passed=False, explanation=why)
            return gym.grading.compose({"files": failed}, [], grader=GRADER, version=GRADER_VERSION)
        components: dict[str, gym.Component] = {}
        if "output" in spec.compare:
            components["output"] = gym.grading.compare_output(final_state.answer, gold.stdout)
        if "files" in spec.compare:
            components["files"] = gym.grading.compare_trees(
                tree, gold.final, spec.paths, gold.initial
            )
        flags = gym.grading.unexpected_changes(gold.initial, gold.final, tree)
        return gym.grading.compose(components, flags, grader=GRADER, version=GRADER_VERSION)

    def replay(self, task: gym.Task) -> gym.grading.GoldReplay:
        """The gold command's replay for a task (in a fresh grading container; cached).

        A pure function of the image, the task's files, its gold command and this grader:
        each is replayed once per process.

        Raises:
            GradingError: the gold timed out or printed too much (a task defect).
            SandboxError: the grading container failed.
        """
        spec = ShellSpec.of(task)
        image = self.sandbox_config().image
        archive = self._archive(task)
        key = hashlib.sha256(
            b"\0".join(
                [image.encode(), GRADER_VERSION.encode(), hashlib.sha256(archive).digest()]
                + [spec.model_dump_json().encode()]
            )
        ).hexdigest()
        found = _replays.get(key)
        if found is None:
            uid = gym.grading.gold_uid()
            found = gym.grading.replay_gold(
                self.sandboxes,
                self._grading_config(image, uid),
                archive,
                spec.gold,
                user=f"{uid}:{uid}",
                timeout=spec.gold_timeout,
            )
            _replays.put(key, found)
        return found

    def _grading_config(self, image: str, uid: int) -> gym.sandbox.SandboxConfig:
        """A grading container whose workspace and home ``uid`` may write (the gold's).

        Not the agents' uid: the kernel's per-uid counts (epoll and inotify watches,
        pipes, pending signals) are shared by every process of a uid on the machine, so
        an agent running at the same time could make the gold fail (found by a red-team
        helper: a gold using asyncio printed nothing, and its cached output graded).
        """
        return gym.grading.grader_config(
            image,
            tmpfs={
                "/workspace": WORKSPACE_TMPFS.format(uid=uid),
                "/tmp": "size=256m,mode=1777",
                "/home/agent": f"size=64m,uid={uid},gid={uid},mode=0755",
            },
        )

    def _archive(self, task: gym.Task) -> bytes:
        return _archive_of(task.folder() / "files")

    def _answer(self) -> str:
        value = self.final_call.arguments.get("answer", "") if self.final_call else ""
        return value[:MAX_ANSWER] if isinstance(value, str) else ""


_replays = gym.authoring.LRUCache(256)


def _archive_of(folder: Path) -> bytes:
    """The task's initial tree as an archive (an empty one when it has no files/)."""
    return gym.grading.tree_archive(folder)
