"""`ContainerEnv`: a Gymnasium environment over a fresh hardened container per episode."""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, SupportsFloat

import gymnasium
from pydantic import BaseModel, Field

from gym._errors import (
    ConfigError,
    EngineUnavailable,
    GymError,
    InfraError,
    SandboxUnavailable,
    TaskNotFound,
)
from gym._images import ensure_image
from gym._models import Split, Task, Verdict, load_tasks
from gym._paths import project_root
from gym._sandbox import Sandbox, SandboxConfig, discard, pool_for
from gym._spaces import TextSpace, ToolCallSpace
from gym._tools import ToolCall, ToolSpec, parse_call, tool_specs

__all__ = ["ContainerEnv", "StepRecord"]


class StepRecord(BaseModel):
    """One step of an episode as the environment saw it (timings included)."""

    call: ToolCall | None
    """The parsed tool call, or None when the action could not be parsed."""
    raw_action: Any = None
    """The action as given, when it could not be parsed."""
    observation: str
    """What the agent was shown."""
    error: str = ""
    """Why the action was rejected, if it was."""
    exit_code: int | None = None
    """Exit code of a command the tool ran, if any."""
    timed_out: bool = False
    """The command ran past its time limit."""
    duration_s: float = 0.0
    """Wall-clock seconds the step took in the environment."""
    started_at: float = Field(default_factory=time.time)
    """Unix time the step began."""


class ContainerEnv(gymnasium.Env[str, dict[str, Any]]):
    """A Gymnasium environment whose every episode runs in a fresh hardened container.

    Subclasses name their ``family`` (the seeds/ folder) and ``image`` (the images/
    folder), declare tools with `gym.tool`, seed the container in `setup` and grade in
    `grade`. Actions are OpenAI-style tool calls; observations are text. At the
    terminal step ``info["verdict"]`` holds the verdict. An episode that cannot be
    graded for infrastructure reasons raises `InfraError` instead of inventing a reward.

    Args:
        render_mode: ``"ansi"`` or None.
        split: only tasks of this split (``train`` or ``eval``); all by default.
        tasks: an explicit task list (overrides seeds/).
        exec_timeout: seconds a single command may run.
        max_output: bytes of each output stream shown to the agent (head and tail).
        run: value of the ``boxgym.run`` label on this env's containers.
        max_steps: step budget, overriding the registered one (applied by `EpisodeLimits`).
        max_seconds: wall-clock budget, overriding the registered one.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 4}  # noqa: RUF012
    family: ClassVar[str] = ""
    image: ClassVar[str] = ""
    sandbox_settings: ClassVar[dict[str, Any]] = {}

    def __init__(
        self,
        *,
        render_mode: str | None = None,
        split: Split | None = None,
        tasks: list[Task] | None = None,
        exec_timeout: float = 60.0,
        max_output: int = 16_384,
        run: str = "adhoc",
        max_steps: int | None = None,
        max_seconds: float | None = None,
    ) -> None:
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ConfigError(f"render_mode must be one of {self.metadata['render_modes']}")
        self.render_mode = render_mode
        all_tasks = tasks if tasks is not None else self.load_tasks()
        self.tasks = [t for t in all_tasks if split is None or t.split == split]
        if not self.tasks:
            raise ConfigError(f"{type(self).__name__} has no tasks (split={split})")
        self.exec_timeout = exec_timeout
        self.max_steps = max_steps
        self.max_seconds = max_seconds
        self.max_output = max_output
        self.run_label = run
        self.tools = tool_specs(self)
        self.action_space = ToolCallSpace(list(self.tools), samples=self.sample_calls())
        self.observation_space = TextSpace()
        self.sandbox: Sandbox | None = None
        self.task: Task | None = None
        self.trace: list[StepRecord] = []
        self.verdict: Verdict | None = None
        self.deadline: float | None = None
        self.final_call: ToolCall | None = None
        """The final tool's call (``submit`` and its validated arguments), once made."""
        self.last_export: Any = None
        """The final state the episode's grading exported (stored with the episode)."""
        self._done = True
        self._image_digest = ""

    # -- what subclasses provide ----------------------------------------------------------

    @classmethod
    def load_tasks(cls) -> list[Task]:
        """The family's tasks, from seeds/<family>/ by default."""
        here = Path(inspect.getfile(cls)).resolve().parents[2] / "seeds"
        if (here / cls.family).is_dir():
            return load_tasks(here, cls.family)
        return load_tasks(project_root() / "seeds", cls.family)

    def sample_calls(self) -> list[dict[str, Any]]:
        """Calls without side effects, used by ``action_space.sample()``."""
        return []

    def setup(self, task: Task, sandbox: Sandbox) -> None:
        """Prepare a fresh sandbox for a task (write its files, start its services)."""

    def prompt(self, task: Task) -> str:
        """The first observation: the task as the agent reads it."""
        return task.prompt

    def grade(self, task: Task, sandbox: Sandbox, reason: str) -> Verdict:
        """Grade the finished episode; never in the agent's container for real graders."""
        raise NotImplementedError

    # -- Gymnasium API ----------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start an episode on a fresh container.

        Args:
            seed: seeds the RNG; with no ``task`` option it picks the task.
            options: ``{"task": id}`` chooses the task.
        """
        super().reset(seed=seed)
        self.last_export = None  # never the previous episode's, even if this start fails
        task = self._pick_task(options or {})
        self._release()
        config = self.sandbox_config()
        try:
            sandbox = pool_for(config).acquire()
            self.sandbox = sandbox
            self.setup(task, sandbox)
        except (SandboxUnavailable, EngineUnavailable) as exc:
            self._release()
            raise InfraError(f"could not start a sandbox for {task.id}: {exc}") from exc
        self.task, self.trace, self.verdict, self._done = task, [], None, False
        self.final_call = None
        self.deadline = None
        info = {
            "task_id": task.id,
            "split": task.split,
            "tags": dict(task.tags),
            "tools": [spec.openai_schema() for spec, _ in self.tools.values()],
        }
        return self.prompt(task), info

    def step(self, action: dict[str, Any]) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """Run one tool call; ``submit`` (a final tool) ends and grades the episode."""
        if self._done or self.sandbox is None:
            raise ConfigError("the episode is over (or never began): call reset() first")
        start = time.monotonic()
        try:
            call = parse_call(action)
            spec, method = self._lookup(call)
            args = spec.validate_args(call.arguments)
        except ValueError as exc:
            return self._reject(action, str(exc), start)
        if spec.kind == "final":
            self._record(call, "", start)
            self.final_call = call.model_copy(update={"arguments": args})
            return self.end_episode(reason=call.name)
        obs = self._call(method, args)
        self._record(call, obs, start)
        return obs, 0.0, False, False, {"tool": call.name}

    def end_episode(
        self, *, reason: str = "submit", truncated: bool = False
    ) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """Grade the episode now and return the terminal transition.

        Raises:
            InfraError: the episode could not be graded for infrastructure reasons.
        """
        assert self.task is not None and self.sandbox is not None
        self._done = True
        verdict = self._safe_grade(self.task, self.sandbox, reason)
        self.verdict = verdict
        self._release()
        if verdict.outcome == "infra_error":
            raise InfraError(
                f"{self.task.id}: {verdict.reason}", verdict=verdict.model_dump(mode="json")
            )
        assert verdict.reward is not None
        obs = f"Episode over ({reason}): {verdict.outcome}."
        info = {"verdict": verdict.model_dump(mode="json"), "end_reason": reason}
        return obs, float(verdict.reward), not truncated, truncated, info

    def render(self) -> str | None:
        """The transcript so far as text (render mode ``ansi``)."""
        if self.render_mode != "ansi":
            return None
        lines = [f"# task {self.task.id if self.task else '-'}"]
        for rec in self.trace:
            call = rec.call.name + json.dumps(rec.call.arguments) if rec.call else "<invalid>"
            lines += [f"> {call}", rec.observation]
        return "\n".join(lines) + "\n"

    def close(self) -> None:
        """Remove the episode's container; safe to call more than once."""
        self._release()
        self._done = True

    # -- helpers ------------------------------------------------------------------

    def sandbox_config(self) -> SandboxConfig:
        """The hardened sandbox settings for this family's image."""
        if not self._image_digest:
            self._image_digest = ensure_image(self.image)
        return SandboxConfig(image=self._image_digest, **self.sandbox_settings)

    @property
    def image_digest(self) -> str:
        """Digest of the image episodes run on."""
        return self._image_digest

    @property
    def env_id(self) -> str:
        """The registered id (``boxgym/Name-vN``), or the class name when made directly."""
        return self.spec.id if self.spec is not None else type(self).__name__

    def command_timeout(self) -> float:
        """Seconds the next command may run: the exec timeout, capped by the deadline."""
        if self.deadline is None:
            return self.exec_timeout
        return max(1.0, min(self.exec_timeout, self.deadline - time.monotonic()))

    def task_by_id(self, task_id: str) -> Task:
        """The task with this id.

        Raises:
            TaskNotFound: the environment has no such task.
        """
        return self._pick_task({"task": task_id})

    def _pick_task(self, options: dict[str, Any]) -> Task:
        wanted = options.get("task")
        if wanted is None:
            return self.tasks[int(self.np_random.integers(len(self.tasks)))]
        for task in self.tasks:
            if task.id == wanted:
                return task
        sample = ", ".join(t.id for t in self.tasks[:5])
        raise TaskNotFound(f"{type(self).__name__} has no task {wanted!r} (for example: {sample})")

    def _lookup(self, call: ToolCall) -> tuple[ToolSpec, Callable[..., str]]:
        if call.name not in self.tools:
            raise ValueError(f"unknown tool {call.name!r}; tools are: {', '.join(self.tools)}")
        return self.tools[call.name]

    def _call(self, method: Callable[..., str], args: dict[str, Any]) -> str:
        try:
            return method(**args)
        except (SandboxUnavailable, EngineUnavailable) as exc:
            self._done = True
            verdict = self.with_lineage(Verdict.infra(f"sandbox failed mid-episode: {exc}"))
            self.verdict = verdict
            self._release()
            raise InfraError(str(exc), verdict=verdict.model_dump(mode="json")) from exc
        except GymError as exc:
            return f"Error: {exc}"

    def _reject(
        self, action: Any, error: str, start: float
    ) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        obs = f"Error: {error}"
        self.trace.append(
            StepRecord(
                call=None,
                raw_action=_jsonable(action),
                observation=obs,
                error=error,
                duration_s=time.monotonic() - start,
            )
        )
        return obs, 0.0, False, False, {"error": error}

    def _record(self, call: ToolCall, obs: str, start: float) -> None:
        self.trace.append(
            StepRecord(
                call=call,
                observation=obs,
                duration_s=time.monotonic() - start,
                exit_code=self._last_exit,
                timed_out=self._last_timeout,
            )
        )
        self._last_exit, self._last_timeout = None, False

    _last_exit: int | None = None
    _last_timeout: bool = False

    def note(self, exit_code: int | None, timed_out: bool = False) -> None:
        """Let a tool record the exit code of the command it ran, for the trace."""
        self._last_exit, self._last_timeout = exit_code, timed_out

    def _safe_grade(self, task: Task, sandbox: Sandbox, reason: str) -> Verdict:
        try:
            verdict = self.grade(task, sandbox, reason)
        except Exception as exc:  # a grader that raises is an infra error, never a reward
            verdict = Verdict.infra(f"grader raised {type(exc).__name__}: {exc}")
        return self.with_lineage(verdict)

    def with_lineage(self, verdict: Verdict) -> Verdict:
        """The verdict with this episode's lineage (env id, task, image, hidden hash)."""
        return verdict.model_copy(
            update={
                "env_id": self.env_id,
                "task_id": self.task.id if self.task else "",
                "image_digest": verdict.image_digest or self._image_digest,
                "hidden_hash": verdict.hidden_hash or (self.task.hidden_hash if self.task else ""),
            }
        )

    def _release(self) -> None:
        if self.sandbox is not None:
            discard(self.sandbox)
            self.sandbox = None


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value
