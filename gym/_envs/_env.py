"""`ContainerEnv`: a Gymnasium environment over a fresh sandbox per episode.

The contract between boxgym and an environment family is the abstract methods of
`ContainerEnv`: `setup` a fresh sandbox for a task, `export` the final state when the
episode ends, `grade` that final state where the agent never was, and the scripted
`oracle_calls` and `perturbed_calls` that validation replays. Everything else (the
Gymnasium API, tools, budgets, claim flags, lineage, regrading) is written once here.
"""

from __future__ import annotations

import abc
import inspect
import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Generic, SupportsFloat, TypeVar, cast

import gymnasium
from pydantic import BaseModel, Field

from gym._core._errors import (
    ConfigError,
    EngineUnavailable,
    GradingError,
    GymError,
    ImageError,
    InfraError,
    SandboxError,
    SandboxUnavailable,
    TaskNotFound,
)
from gym._core._models import DEFAULT_SPLITS, Split, SplitUse, Task, Verdict, load_tasks
from gym._core._paths import project_root
from gym._core._phase import enter as enter_phase
from gym._core._tools import ToolCall, ToolSpec, parse_call, recorded, tool_specs
from gym._envs._changes import Changes
from gym._envs._spaces import TextSpace, ToolCallSpace
from gym._grading import claim_flags
from gym._sandbox import Sandbox, SandboxConfig, SandboxProvider
from gym._sandbox import default_sandboxes as _default_sandboxes

__all__ = [
    "ContainerEnv",
    "FinalState",
    "StepRecord",
    "default_sandboxes",
    "env_of",
    "tool_calls",
]

FinalState = TypeVar("FinalState", bound=BaseModel)
"""The type of a family's exported final state (a pydantic model, stored as JSON)."""


class StepRecord(BaseModel):
    """One step of an episode as the environment saw it (timings included)."""

    call: ToolCall | None
    """The parsed tool call, or None when the action could not be parsed."""
    raw_action: Any = None
    """The action as given, when it could not be parsed: bounded (see `gym._core._tools.recorded`:
    text up to 64 KiB, a small plain value as is, anything else as a note)."""
    content: str | None = None
    """The text of the assistant message that carried the action (trajectory graders
    read it, for example for a claimed success), when the action said."""
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


def tool_calls(trajectory: Sequence[StepRecord]) -> list[ToolCall]:
    """The valid tool calls of a trajectory, in order."""
    return [r.call for r in trajectory if r.call is not None]


def _as_trajectory(steps: Sequence[StepRecord | ToolCall]) -> list[StepRecord]:
    """A trajectory from stored steps, or from bare tool calls (as older callers pass)."""
    return [s if isinstance(s, StepRecord) else StepRecord(call=s, observation="") for s in steps]


def _with_claims(verdict: Verdict, trajectory: Sequence[StepRecord]) -> Verdict:
    """The verdict plus the flag for a success the agent's last message claimed."""
    said = trajectory[-1].content if trajectory else None
    flags = claim_flags(said or "", verdict.outcome)
    return verdict.model_copy(update={"flags": [*verdict.flags, *flags]}) if flags else verdict


def default_sandboxes() -> SandboxProvider:
    """Hardened Docker containers, each family's image built on first use (the default).

    The process's one default provider (`gym.sandbox.default_sandboxes`).
    """
    return _default_sandboxes()


class ContainerEnv(gymnasium.Env[str, dict[str, Any]], Generic[FinalState], abc.ABC):
    """A Gymnasium environment whose every episode runs in a fresh sandbox.

    A family subclasses it, names its ``family`` (the seeds/ folder), ``image`` (the
    images/ folder) and ``final_state_type``, declares tools with `gym.tool`, and
    provides the contract's abstract methods: `setup`, `export`, `grade`,
    `oracle_calls` and `perturbed_calls`. Actions are OpenAI-style tool calls;
    observations are text.

    The terminal step's ``info`` holds ``"verdict"`` (the one complete verdict, claim
    flags included: the one that is stored), ``"final_state"`` (the exported final
    state as JSON, for regrading) and ``"end_reason"``. The environment owns its
    budgets: after ``max_steps`` steps or ``max_seconds`` seconds the episode ends with
    ``truncated=True`` and is graded all the same. An episode that cannot be graded for
    infrastructure reasons raises `InfraError` instead of inventing a reward.

    Args:
        render_mode: ``"ansi"`` or None.
        split: only tasks of this split (one of the family's `splits`); all by default.
        tasks: an explicit task list (overrides seeds/).
        exec_timeout: seconds a single command may run.
        max_output: bytes of each output stream shown to the agent (head and tail).
        run: value of the ``boxgym.run`` label on this env's sandboxes.
        max_steps: step budget (the registered one by default; None: no limit).
        max_seconds: wall-clock budget in seconds (the registered one by default).
        sandboxes: where sandboxes come from (hardened Docker containers by default;
            ``LocalSandboxes(allow_unsafe=True)`` for unit tests).
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 4}  # noqa: RUF012
    family: ClassVar[str] = ""
    image: ClassVar[str] = ""
    splits: ClassVar[dict[str, SplitUse]] = DEFAULT_SPLITS
    """The family's split names and their roles (``training`` or ``held-out``)."""
    sandbox_settings: ClassVar[dict[str, Any]] = {}
    final_state_type: ClassVar[type[BaseModel]]
    """The pydantic model of the family's final state (what `export` returns)."""

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
        sandboxes: SandboxProvider | None = None,
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
        """Step budget of each episode (None: no limit); read at every step."""
        self.max_seconds = max_seconds
        """Wall-clock budget of each episode in seconds (None: no limit); read at reset."""
        self.max_output = max_output
        self.run_label = run
        self.sandboxes = sandboxes or default_sandboxes()
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
        self.final_state: FinalState | None = None
        """The final state the episode exported (None until the episode is graded)."""
        self._done = True
        self._steps = 0
        self._started = 0.0
        self._image_digest = ""

    # -- the contract: what a family provides --------------------------------------------

    @abc.abstractmethod
    def setup(self, task: Task, sandbox: Sandbox) -> None:
        """Prepare a fresh sandbox for a task: write its files, start its services.

        Called at every reset, before the agent acts. Raise `SandboxUnavailable` when
        the sandbox is not usable (the episode becomes an infrastructure error).
        """

    @abc.abstractmethod
    def export(self, task: Task, sandbox: Sandbox) -> FinalState:
        """Freeze the agent's sandbox and return its final state, the input of `grade`.

        Called once when the episode ends (submitted or out of budget), in the agent's
        sandbox, which is removed afterwards. The state is stored with the episode (as
        JSON) so that `regrade` can grade it again. The final tool's call is
        ``self.final_call`` (None when the budget ran out).

        Raises:
            SandboxError: the sandbox failed (the episode becomes ``infra_error``).
            GradingError: the state could not be read for a reason not the agent's.
        """

    @abc.abstractmethod
    def grade(
        self, task: Task, final_state: FinalState, trajectory: Sequence[StepRecord]
    ) -> Verdict:
        """Grade a final state where the agent never was (for example a fresh container).

        A pure function of its arguments and the task's hidden checks: `regrade` calls
        it on a stored final state and trajectory and must get the same verdict. Return
        ``Verdict.infra(...)`` for faults of the infrastructure; never a reward for them.
        The claim flag and the lineage (env, task, image, hidden hash) are added here,
        by the environment.

        Args:
            task: the task.
            final_state: what `export` returned (or its stored copy).
            trajectory: every step, with the tool calls and the assistant's text.
        """

    @abc.abstractmethod
    def oracle_calls(self, task: Task) -> list[ToolCall]:
        """The task's reference solution as tool calls, ending with the final tool.

        Validation replays it: it must pass, unflagged, every time.
        """

    @abc.abstractmethod
    def perturbed_calls(self, task: Task) -> list[ToolCall] | None:
        """The reference solution plus one forbidden side effect, which must be flagged.

        Return None when the family has no forbidden side effect to plant (validation
        then skips this check).
        """

    # -- optional hooks --------------------------------------------------------------------

    def panel_calls(self, task: Task) -> dict[str, list[ToolCall]]:
        """Generic cheating policies for this task, by name, each as tool calls.

        Each ends with the final tool and does none of the task's work: a liar object,
        an empty answer, a constant, the visible example echoed. Validation plays every
        one of them and calls the task invalid when any of them does not end ``fail``
        (noop is checked on its own). None by default.
        """
        return {}

    @classmethod
    def seeds_dir(cls) -> Path:
        """The seeds/ folder that holds the family's ``<family>/`` folder.

        The one of the checkout that defines the class, else the project's.
        """
        here = Path(inspect.getfile(cls)).resolve().parents[2] / "seeds"
        return here if (here / cls.family).is_dir() else project_root() / "seeds"

    @classmethod
    def load_tasks(cls) -> list[Task]:
        """The family's tasks, from seeds/<family>/ by default."""
        return load_tasks(cls.seeds_dir(), cls.family, splits=cls.splits)

    def sample_calls(self) -> list[dict[str, Any]]:
        """Calls without side effects, used by ``action_space.sample()``."""
        return []

    def changes(self, task: Task, final_state: FinalState) -> Changes | None:
        """What an episode changed, from its stored final state, for people to read.

        The viewer (``gym view``) shows each changed file as a diff of its content
        before and after. A pure function of the task and the final state (no sandbox is
        running): it is called on stored episodes, on an environment that was never
        reset. None by default: the viewer then shows the final state as JSON.

        Args:
            task: the episode's task.
            final_state: its stored final state (what `export` returned).
        """
        return None

    def prompt(self, task: Task) -> str:
        """The first observation: the task as the agent reads it."""
        return task.prompt

    # -- grading, once -------------------------------------------------------------------

    def regrade(
        self,
        task_id: str,
        final_state: Mapping[str, Any] | BaseModel,
        trajectory: Sequence[StepRecord | ToolCall] = (),
    ) -> Verdict:
        """Grade a stored final state again with the current graders (no agent run).

        The same grading as at the end of an episode: given the episode's stored final
        state and trajectory it returns the same verdict, claim flags included.

        Args:
            task_id: the episode's task.
            final_state: the stored final state (its JSON, or the model).
            trajectory: the episode's steps (or, from older callers, its tool calls).
        """
        task = self.task_by_id(task_id)
        self.sandbox_config()  # resolves the image that grading records and uses
        data = final_state.model_dump() if isinstance(final_state, BaseModel) else final_state
        state = cast(FinalState, self.final_state_type.model_validate(data))
        return self._graded(task, state, _as_trajectory(trajectory))

    def _graded(self, task: Task, state: FinalState, trajectory: Sequence[StepRecord]) -> Verdict:
        try:
            verdict = self.grade(task, state, trajectory)
        except Exception as exc:  # a grader that raises is an infra error, never a reward
            verdict = Verdict.infra(f"grader raised {type(exc).__name__}: {exc}")
        return self._lineage(_with_claims(verdict, trajectory), task)

    def _finish(self, task: Task, sandbox: Sandbox) -> Verdict:
        """Export the final state, give the sandbox back, then grade (every episode's end).

        The agent's sandbox goes before grading starts: grading never needs it, and its
        container is freed for the next episode meanwhile.
        """
        try:
            state = self.export(task, sandbox)
        except (SandboxError, GradingError) as exc:
            return self._lineage(Verdict.infra(f"could not export the final state: {exc}"), task)
        except Exception as exc:  # a bug in the family's export: infra, never a reward
            return self._lineage(Verdict.infra(f"grader raised {type(exc).__name__}: {exc}"), task)
        finally:
            self._release()
        self.final_state = state
        enter_phase("grading")
        return self._graded(task, state, self.trace)

    # -- Gymnasium API ----------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start an episode on a fresh sandbox.

        Args:
            seed: seeds the RNG; with no ``task`` option it picks the task.
            options: ``{"task": id}`` chooses the task.
        """
        super().reset(seed=seed)
        self.final_state = None  # never the previous episode's, even if this start fails
        task = self._pick_task(options or {})
        self._release()
        config = self.sandbox_config()
        try:
            sandbox = self.sandboxes.acquire(config, run=self.run_label, role="agent")
            self.sandbox = sandbox
            self.setup(task, sandbox)
        except ImageError:
            self._release()
            raise  # a missing or broken image: every episode would fail alike, say how to fix
        except SandboxError as exc:  # the engine, the container or writing the task files
            self._release()
            raise InfraError(f"could not start a sandbox for {task.id}: {exc}") from exc
        self.task, self.trace, self.verdict, self._done = task, [], None, False
        self.final_call = None
        self._steps, self._started = 0, time.monotonic()
        self.deadline = None if self.max_seconds is None else self._started + self.max_seconds
        info = {
            "task_id": task.id,
            "split": task.split,
            "tags": dict(task.tags),
            "tools": [spec.openai_schema() for spec, _ in self.tools.values()],
        }
        return self.prompt(task), info

    def step(self, action: dict[str, Any]) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """Run one tool call; a final tool (``submit``) then ends and grades the episode.

        Args:
            action: ``{"name": ..., "arguments": {...}}`` (arguments may be JSON text),
                a `ToolCall`, or the JSON text of one. A dict may also carry
                ``"content"``: the text of the assistant message that made the call,
                which the trajectory graders read (a claimed success).
        """
        if self._done or self.sandbox is None:
            raise ConfigError("the episode is over (or never began): call reset() first")
        start = time.monotonic()
        self._steps += 1
        content = _content_of(action)
        try:
            call = parse_call(action)
            spec, method = self._lookup(call)
            args = spec.validate_args(call.arguments)
        except ValueError as exc:
            return self._budgeted(*self._reject(action, str(exc), start, content))
        obs = self._call(method, args)  # a final tool's body runs too (its effect is graded)
        self._record(call, obs, start, content)
        if spec.kind == "final":
            self.final_call = call.model_copy(update={"arguments": args})
            return self.end_episode(reason=call.name)
        return self._budgeted(obs, {"tool": call.name})

    def end_episode(
        self, *, reason: str = "submit", truncated: bool = False
    ) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """Export and grade the episode now and return the terminal transition.

        Raises:
            InfraError: the episode could not be graded for infrastructure reasons.
        """
        if self._done or self.task is None or self.sandbox is None:
            raise ConfigError("the episode is over (or never began): call reset() first")
        self._done = True
        verdict = self._finish(self.task, self.sandbox)
        self.verdict = verdict
        self._release()
        state = None if self.final_state is None else self.final_state.model_dump(mode="json")
        if verdict.outcome == "infra_error":
            raise InfraError(
                f"{self.task.id}: {verdict.reason}",
                verdict=verdict.model_dump(mode="json"),
                final_state=state,
            )
        assert verdict.reward is not None
        obs = f"Episode over ({reason}): {verdict.outcome}."
        info = {"verdict": verdict.model_dump(mode="json"), "final_state": state}
        return obs, float(verdict.reward), not truncated, truncated, {**info, "end_reason": reason}

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
        """Give the episode's sandbox back; safe to call more than once."""
        self._release()
        self._done = True

    # -- budgets ------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        """Whether no episode is running (before the first reset, or after its end)."""
        return self._done

    def set_budgets(self, *, max_steps: int | None, max_seconds: float | None) -> None:
        """Change the step and time budgets (the time budget applies from the next reset)."""
        self.max_steps, self.max_seconds = max_steps, max_seconds

    def _budget_spent(self) -> str:
        """Why the episode must end now (a spent budget), or ''."""
        if self.max_steps is not None and self._steps >= self.max_steps:
            return f"step limit ({self.max_steps})"
        if self.max_seconds is not None and time.monotonic() - self._started >= self.max_seconds:
            return f"time limit ({self.max_seconds:.0f}s)"
        return ""

    def _budgeted(
        self, obs: str, info: dict[str, Any]
    ) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """A non-final step's transition, truncated and graded when a budget is spent."""
        reason = self._budget_spent()
        if not reason:
            return obs, 0.0, False, False, info
        _, reward, _, _, end = self.end_episode(reason=reason, truncated=True)
        return obs, reward, False, True, {**info, **end}

    # -- helpers ------------------------------------------------------------------

    def sandbox_config(self) -> SandboxConfig:
        """The hardened sandbox settings for this family's image."""
        if not self._image_digest:
            self._image_digest = self.sandboxes.image(self.image)
        return SandboxConfig(image=self._image_digest, **self.sandbox_settings)

    @property
    def image_digest(self) -> str:
        """Digest of the image episodes run on."""
        return self._image_digest

    @property
    def last_export(self) -> FinalState | None:
        """Deprecated name of `final_state`."""
        return self.final_state

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
        self, action: Any, error: str, start: float, content: str | None
    ) -> tuple[str, dict[str, Any]]:
        obs = f"Error: {error}"
        self.trace.append(
            StepRecord(
                call=None,
                raw_action=recorded(action),
                content=content,
                observation=obs,
                error=error,
                duration_s=time.monotonic() - start,
            )
        )
        return obs, {"error": error}

    def _record(self, call: ToolCall, obs: str, start: float, content: str | None) -> None:
        self.trace.append(
            StepRecord(
                call=call,
                content=content,
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

    def with_lineage(self, verdict: Verdict) -> Verdict:
        """The verdict with this episode's lineage (env id, task, image, hidden hash)."""
        return self._lineage(verdict, self.task)

    def _lineage(self, verdict: Verdict, task: Task | None) -> Verdict:
        return verdict.model_copy(
            update={
                "env_id": self.env_id,
                "task_id": task.id if task else "",
                "image_digest": verdict.image_digest or self._image_digest,
                "hidden_hash": verdict.hidden_hash or (task.hidden_hash if task else ""),
            }
        )

    def _release(self) -> None:
        if self.sandbox is not None:
            self.sandboxes.release(self.sandbox)
            self.sandbox = None


def env_of(env: gymnasium.Env[Any, Any]) -> ContainerEnv[Any]:
    """The `ContainerEnv` inside a (possibly wrapped) environment.

    Raises:
        TypeError: the environment is not a boxgym one.
    """
    inner = env.unwrapped
    if not isinstance(inner, ContainerEnv):
        raise TypeError(f"{type(inner).__name__} is not a boxgym ContainerEnv")
    return inner


def _content_of(action: Any) -> str | None:
    """The assistant text an action carries: its ``content``, or the text itself."""
    if isinstance(action, str):
        return action
    if isinstance(action, dict) and isinstance(action.get("content"), str):
        return str(action["content"])
    return None
