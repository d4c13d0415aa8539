"""`ContainerEnv`: a Gymnasium environment over a fresh sandbox per episode.

The contract between boxgym and an environment family is the abstract methods of
`ContainerEnv`: `setup` a fresh sandbox for a task, `export` the final state when the
episode ends, `grade` that final state where the agent never was, and the scripted
`oracle_calls` and `perturbed_calls` that validation replays. Everything else (the
Gymnasium API, tools, turns, budgets, claim flags, lineage, regrading) is written once
here.

Tools come from three places, merged at every reset into the episode's tool table: the
family's `gym.tool` methods, its ``tool_schemas`` (tools declared as JSON schemas, run by
its `call_tool`), and the task's own ``tools``, minus the task's ``drop_tools``. An episode
holds one user turn or more: the final tool ends a turn, and the environment's `User`
(the task's scripted ``turns`` by default) sends the next message or ends the episode.
"""

from __future__ import annotations

import abc
import functools
import inspect
import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, NoReturn, SupportsFloat, TypeVar, cast

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
from gym._core._models import (
    DEFAULT_SPLITS,
    Flag,
    Split,
    SplitUse,
    Task,
    TaskKeys,
    Verdict,
    load_tasks,
)
from gym._core._paths import project_root
from gym._core._phase import enter as enter_phase
from gym._core._schemas import SchemaTool
from gym._core._tools import (
    ToolCall,
    ToolSpec,
    call_name,
    parse_call,
    recorded,
    tool_specs,
)
from gym._envs._changes import Changes
from gym._envs._spaces import TextSpace, ToolCallSpace
from gym._envs._users import RecordingUser, ScriptedUser, User
from gym._grading import claim_flags
from gym._sandbox import Sandbox, SandboxConfig, SandboxProvider
from gym._sandbox import default_sandboxes as _default_sandboxes

if TYPE_CHECKING:
    from gym._envs._fork import Lineage

__all__ = [
    "SYSTEM_PROMPT",
    "ContainerEnv",
    "FinalState",
    "StepRecord",
    "default_sandboxes",
    "env_of",
    "tool_calls",
]

FinalState = TypeVar("FinalState", bound=BaseModel)
"""The type of a family's exported final state (a pydantic model, stored as JSON)."""

SYSTEM_PROMPT = (
    "You are an autonomous agent working inside a Linux container. Use the tools to "
    "inspect and change the environment, one tool call per turn. When the task is done, "
    "call submit. Nobody will answer questions: decide and act."
)
"""The system prompt of a family that declares none (`ContainerEnv.system_prompt`)."""
Tools = dict[str, tuple[ToolSpec, Callable[..., str]]]
"""A tool table: name -> (spec, the callable that runs it)."""


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
    tried: str = ""
    """The tool a rejected action called that the environment does not offer (read as
    every action is, whatever its shape: a dict, the OpenAI form, JSON text, and whatever
    is wrong with its arguments); '' otherwise."""
    exit_code: int | None = None
    """Exit code of a command the tool ran, if any."""
    timed_out: bool = False
    """The command ran past its time limit."""
    duration_s: float = 0.0
    """Wall-clock seconds the step took in the environment."""
    started_at: float = Field(default_factory=time.time)
    """Unix time the step began."""
    turn: int = 0
    """The 0-based index of the user turn the step belongs to."""
    turn_end: bool = False
    """The step called the final tool: it ended its user turn (the episode's last or not)."""
    user: str | None = None
    """The user's next message, on a step that ended a turn and did not end the episode."""


def tool_calls(trajectory: Sequence[StepRecord]) -> list[ToolCall]:
    """The valid tool calls of a trajectory, in order."""
    return [r.call for r in trajectory if r.call is not None]


def _as_trajectory(steps: Sequence[StepRecord | ToolCall]) -> list[StepRecord]:
    """A trajectory from stored steps, or from bare tool calls (as older callers pass)."""
    return [s if isinstance(s, StepRecord) else StepRecord(call=s, observation="") for s in steps]


_OUT_OF_MEMORY = (
    "the container reached its memory limit and the kernel killed its keeper: what the "
    "agent's processes and files held filled it; nothing of its state is left to grade"
)


def _memory_verdict() -> Verdict:
    """The agent's fail when its container's memory limit killed the keeper (`_oom`).

    Provenance: the engine's own record of the kill; what fills the memory is the
    agent's (its processes, its files in memory, what it holds outside any process).
    """
    flag = Flag(name="resource_limit", detail=_OUT_OF_MEMORY)
    return Verdict(outcome="fail", reward=0.0, flags=[flag], reason=_OUT_OF_MEMORY)


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
    images/ folder) and ``final_state_type``, declares tools with `gym.tool` (or as JSON
    schemas in ``tool_schemas``, run by `call_tool`), and provides the contract's
    abstract methods: `setup`, `export`, `grade`, `oracle_calls` and `perturbed_calls`.
    Actions are OpenAI-style tool calls; observations are text.

    Reset's ``info`` holds ``"tools"`` (the episode's tool schemas), ``"system_prompt"``
    (the task's, else the family's, else `SYSTEM_PROMPT`) and ``"turn"`` (0). When the
    final tool ends a user turn that is not the last, the step is not terminal: its
    ``info`` holds ``"user"`` (the next user message) and ``"turn"`` (the new index).

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
        user: who sends the next message when the agent ends a turn (`ScriptedUser`,
            the task's ``turns``, by default).
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 4}  # noqa: RUF012
    family: ClassVar[str] = ""
    image: ClassVar[str] = ""
    splits: ClassVar[dict[str, SplitUse]] = DEFAULT_SPLITS
    """The family's split names and their roles (``training`` or ``held-out``)."""
    task_keys: ClassVar[type[TaskKeys]] = TaskKeys
    """The schema of the family's own task.toml keys (what ends in ``Task.data``): a
    subclass of `gym.authoring.TaskKeys`. A task with a key it does not declare, or a
    value of the wrong type, is left out with its problem (``gym env list`` shows it)."""
    sandbox_settings: ClassVar[dict[str, Any]] = {}
    """`gym.sandbox.SandboxConfig` fields that replace the hardened defaults for the
    family's sandboxes (for example ``{"memory_mb": 512, "pids_limit": 64}``)."""
    final_state_type: ClassVar[type[BaseModel]]
    """The pydantic model of the family's final state (what `export` returns)."""
    system_prompt: ClassVar[str | None] = None
    """The family's system prompt (None: `SYSTEM_PROMPT`); a task's ``system_prompt`` in
    task.toml overrides it. Reset's ``info["system_prompt"]`` is the one to use."""
    tool_schemas: ClassVar[tuple[dict[str, Any], ...]] = ()
    """Tools of every task of the family declared as OpenAI function schemas, run by
    `call_tool` (``"x-boxgym-kind"``: read, write or final; write by default). One named
    as a `gym.tool` method replaces it."""
    forkable: ClassVar[bool] = False
    """Whether `fork` may copy an episode: the family's whole state is its sandbox's
    mounts and shell (code families can without saying so; see gym/_envs/_fork.py)."""
    ends_by_budget: ClassVar[bool] = False
    """Whether the step budget is how an episode ends: then the tool table may hold no
    final tool (every other family must offer one, so that the agent can end)."""
    declared_in: ClassVar[Path | None] = None
    """The folder whose boxgym.toml declares the environment (``base``), if so."""
    drop_tools: ClassVar[tuple[str, ...]] = ()
    """Inherited tools the environment does not offer (a declared environment's
    ``drop_tools``); a task's own ``drop_tools`` are dropped after these."""

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
        user: User | None = None,
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
        self.user: User = user if user is not None else ScriptedUser()
        """Who sends the next message when the agent ends a turn."""
        self.tools: Tools = {**tool_specs(self), **self._schema_tools(_family_tools(type(self)))}
        """The tool table: the family's before the first reset, the episode's after it."""
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
        self.turn = 0
        """The index of the current user turn (0: the task's prompt)."""
        self.user_transcript: list[dict[str, Any]] = []
        """The user's messages so far: ``turn``, ``content`` and, from a `RecordingUser`
        (a simulated one), ``raw``: the record behind the message."""
        self.episode_uid = ""
        """A fresh id of the running episode (a uuid, new at every reset and fork)."""
        self.lineage: Lineage | None = None
        """Where the running episode was forked from (None: it began at a reset)."""
        self._done = True
        self._steps = 0
        self._out_of_memory = False
        """The memory limit ended the episode's container mid-step (the agent's fail)."""
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

    def scripted_state(
        self, task: Task, calls: Sequence[ToolCall], untouched: FinalState | None = None
    ) -> FinalState | None:
        """The final state ``calls`` leave, when it follows from them without playing them.

        ``untouched``: the final state of an episode that only submitted (noop's), when
        there is one. Validation grades a panel policy's calls as this state (`regrade`,
        no agent container) when it is not None, and plays them otherwise. None by
        default.
        """
        return None

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
        return load_tasks(cls.seeds_dir(), cls.family, splits=cls.splits, keys=cls.task_keys)

    @classmethod
    def task_inputs(cls, task: Task) -> list[Path]:
        """Files outside the task's folder that its grading reads (none by default).

        A stored validation result is kept only while these, like the task's own folder,
        are unchanged: a family whose tasks share a database or a backend lists them.
        """
        return []

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

    def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        """Run a tool declared as a JSON schema (``tool_schemas`` or the task's ``tools``).

        Called with validated arguments (coerced when the task is lenient); returns the
        observation. A `GymError` it raises is shown to the agent as ``Error: ...``;
        `SandboxUnavailable` ends the episode as an infrastructure error.

        Raises:
            ConfigError: the family declares schema tools without implementing this.
        """
        raise ConfigError(
            f"{type(self).__name__} offers the schema tool {name!r} but does not implement "
            "call_tool(name, arguments): implement it to run the tools it declares as JSON "
            "schemas (ContainerEnv.tool_schemas, or a task's tools)"
        )

    def turn_ended(self, task: Task, sandbox: Sandbox, turn: int) -> None:
        """The agent ended user turn ``turn`` (0-based) with the final tool.

        Called at every turn's end, the last one included, before the user is asked
        for the next message (and before `export`, on the last). A family that grades
        the state after each turn snapshots it here (into the sandbox or onto itself,
        for its `export`). Nothing by default.

        Raises:
            SandboxError: the sandbox failed (the episode becomes ``infra_error``).
        """

    def system_prompt_for(self, task: Task) -> str:
        """The system prompt of an episode of this task.

        The task's own (``system_prompt`` in task.toml), else the family's, else
        `SYSTEM_PROMPT`.
        """
        own = task.data.get("system_prompt")
        if isinstance(own, str) and own:
            return own
        return type(self).system_prompt or SYSTEM_PROMPT

    def tool_table(self, task: Task) -> Tools:
        """The tools of an episode of this task, by name.

        The family's methods, then its ``tool_schemas`` (replacing a method of the same
        name), then the task's ``tools`` (replacing either), minus the environment's
        ``drop_tools`` and the task's.

        Raises:
            ConfigError: the task drops a tool there is not, or the final tool; the
                table holds no final tool; or schema tools are offered and the family
                has no `call_tool`.
        """
        family = _family_tools(type(self))
        own = _task_tools(task.tools)
        table = {**tool_specs(self), **self._schema_tools(family, task.lenient)}
        table.update(self._schema_tools(own, task.lenient))
        where = f"task {task.id!r} of {type(self).__name__}"
        for name in dict.fromkeys((*type(self).drop_tools, *task.drop_tools)):
            if name not in table:
                raise ConfigError(
                    f"{where}: drop_tools names {name!r}, which is not one of its tools "
                    f"({', '.join(table)})"
                )
            if table.pop(name)[0].kind == "final":
                raise ConfigError(f"{where}: drop_tools names {name!r}, its final tool; keep it")
        ends = type(self).ends_by_budget and self.max_steps is not None
        if not ends and not any(spec.kind == "final" for spec, _ in table.values()):
            raise ConfigError(
                f"{where} has no final tool (kind 'final'); the agent must end (a family "
                "whose step budget ends its episodes says so with ends_by_budget = True)"
            )
        schema_tools = any(isinstance(spec, SchemaTool) for spec, _ in table.values())
        if schema_tools and type(self).call_tool is ContainerEnv.call_tool:
            raise ConfigError(
                f"{where} offers tools declared as JSON schemas, and "
                f"{type(self).__name__} does not implement call_tool(name, arguments) to run them"
            )
        return table

    def _schema_tools(self, specs: tuple[SchemaTool, ...], lenient: bool = False) -> Tools:
        table: Tools = {}
        for spec in specs:
            run = _schema_runner(self, spec.name)
            table[spec.name] = (spec.model_copy(update={"lenient": True}) if lenient else spec, run)
        return table

    def conversation(self) -> list[dict[str, Any]]:
        """The episode so far from the agent's side, rebuilt from the trace (OpenAI chat).

        The user's messages, each step as an assistant message (its text and its tool
        call) and a tool message (its observation): what a simulated user reads.
        """
        first = self.user_transcript[0]["content"] if self.user_transcript else ""
        messages: list[dict[str, Any]] = [{"role": "user", "content": first}]
        for i, rec in enumerate(self.trace):
            if rec.call is None:
                said = rec.content if rec.content is not None else json.dumps(rec.raw_action)
                messages.append({"role": "assistant", "content": said})
                messages.append({"role": "user", "content": rec.observation})
            else:
                call = rec.call if rec.call.id else rec.call.model_copy(update={"id": f"call_{i}"})
                assistant = {"role": "assistant", "content": rec.content}
                messages.append({**assistant, "tool_calls": [call.wire()]})
                answer = {"role": "tool", "tool_call_id": call.id, "content": rec.observation}
                messages.append(answer)
            if rec.user is not None:
                messages.append({"role": "user", "content": rec.user})
        return messages

    @property
    def turn_count(self) -> int:
        """User turns known so far (the current one included)."""
        return len(self.user_transcript)

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
            if isinstance(exc, SandboxUnavailable) and sandbox.killed_at_memory_limit():
                return self._lineage(_memory_verdict(), task)
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
        self._use_tools(task)
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
        self._out_of_memory = False
        self.final_call = None
        self.episode_uid, self.lineage = uuid.uuid4().hex, None
        self._steps, self._started = 0, time.monotonic()
        self.deadline = None if self.max_seconds is None else self._started + self.max_seconds
        prompt = self.prompt(task)
        self.turn, self.user_transcript = 0, [{"turn": 0, "content": prompt}]
        self.user.start(task, seed)
        info = {
            "task_id": task.id,
            "split": task.split,
            "tags": dict(task.tags),
            "tools": [spec.openai_schema() for spec, _ in self.tools.values()],
            "system_prompt": self.system_prompt_for(task),
            "turn": 0,
        }
        return prompt, info

    def fork(
        self, k: int, *, training: bool = False, parent_id: str | None = None
    ) -> list[ContainerEnv[FinalState]]:
        """Fork into k independent environments in this one's state, each a full episode.

        Each branch has a fresh sandbox from this environment's provider (hardened as at
        a reset) holding a copy of this one's files and shell state (exported variables,
        working directory), a copy of the trajectory so far, its own verdict when it
        ends, and its `lineage`. This episode goes on unchanged. See gym/_envs/_fork.py.

        Args:
            k: how many branches.
            training: the branches are training data: refuse a held-out task.
            parent_id: the id this episode is stored under (``episode_uid`` by default).

        Raises:
            ConfigError: no episode is running, or the family cannot fork.
            HeldOutError: ``training`` and the task is of a held-out split.
            SandboxError: a sandbox failed (no branch is left running).
        """
        from gym._envs._fork import fork

        return fork(self, k, training=training, parent_id=parent_id)

    def _use_tools(self, task: Task) -> None:
        """Make the task's tool table the episode's (and the action space's names)."""
        self.tools = self.tool_table(task)
        space = self.action_space
        if not isinstance(space, ToolCallSpace) or tuple(self.tools) != space.names:
            self.action_space = ToolCallSpace(list(self.tools), samples=self.sample_calls())

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
        call: ToolCall | None = None
        try:
            call = parse_call(action)
            spec, method = self._lookup(call)
            args, notes = spec.read_args(call.arguments)
        except ValueError as exc:
            name = call.name if call is not None else call_name(action)
            tried = name if name not in self.tools else ""
            return self._budgeted(*self._reject(action, str(exc), start, content, tried))
        obs = self._call(method, args)  # a final tool's body runs too (its effect is graded)
        if notes:
            obs = "".join(f"Note: {note}.\n" for note in notes) + obs
        self._record(call, obs, start, content)
        if self._out_of_memory:
            return self._ended_out_of_memory()
        if spec.kind == "final":
            self.final_call = call.model_copy(update={"arguments": args})
            return self._turn_over(call.name, obs)
        return self._budgeted(obs, {"tool": call.name})

    def _turn_over(
        self, reason: str, obs: str
    ) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """The final tool ended a user turn: the next one begins, or the episode ends.

        The family's `turn_ended` runs first; then the user is asked for its next
        message (None: the episode ends and is graded, as a single-turn one does).
        """
        assert self.task is not None and self.sandbox is not None
        record = self.trace[-1]
        record.turn_end = True
        self._guarded(self.turn_ended, self.task, self.sandbox, self.turn)
        message = self._user_says(self.task)
        if message is None:
            return self.end_episode(reason=reason)
        if self._budget_spent():  # the message is never delivered: the episode ends here
            return self._budgeted(obs, {"tool": reason})
        record.user = message
        self.turn += 1
        said: dict[str, Any] = {"turn": self.turn, "content": message}
        if isinstance(self.user, RecordingUser) and (raw := self.user.raw_turn()) is not None:
            said["raw"] = raw
        self.user_transcript.append(said)
        return self._budgeted(obs, {"tool": reason, "user": message, "turn": self.turn})

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
            if rec.user is not None:
                lines += [f"# user (turn {rec.turn + 1})", rec.user]
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

    def exclude_wait(self, seconds: float) -> None:
        """Leave ``seconds`` out of the running episode's time budget (and its deadline).

        The rollout calls it with the seconds a policy spent on its server's failures
        (failed attempts and the waits after them): a flaky model server is not the
        agent's slowness, and must not end its episode at the time limit.
        """
        if seconds > 0:
            self._started += seconds
            if self.deadline is not None:
                self.deadline += seconds

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
        except SandboxUnavailable as exc:
            if self.sandbox is not None and self.sandbox.killed_at_memory_limit():
                self._out_of_memory = True  # the step ends the episode: the agent's fail
                return f"Error: {_OUT_OF_MEMORY}"
            self._infra(f"sandbox failed mid-episode: {exc}", exc)
        except EngineUnavailable as exc:
            self._infra(f"sandbox failed mid-episode: {exc}", exc)
        except GymError as exc:
            return f"Error: {exc}"

    def _ended_out_of_memory(self) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """The terminal transition of an episode whose container its memory limit ended."""
        self._done = True
        self.verdict = self.with_lineage(_memory_verdict())
        self._release()
        verdict = self.verdict.model_dump(mode="json")
        info = {"verdict": verdict, "final_state": None, "end_reason": "out_of_memory"}
        return "Episode over (out of memory): fail.", 0.0, True, False, info

    def _user_says(self, task: Task) -> str | None:
        """The user's next message (None: the episode ends).

        A user that fails (its model's server, a bug) ends the episode as an
        infrastructure error: the agent did nothing wrong. The time the user takes to
        answer (a simulated user waits on its own model) is the environment's, not the
        agent's: it is left out of the episode's time budget.
        """
        start = time.monotonic()
        try:
            return self.user.reply(task, self.conversation())
        except Exception as exc:
            self._infra(f"the user failed: {type(exc).__name__}: {exc}", exc)
        finally:
            self.exclude_wait(time.monotonic() - start)

    def _guarded(self, hook: Callable[..., None], *args: Any) -> None:
        """Run a family hook mid-episode: any failure of it is an infrastructure error."""
        try:
            hook(*args)
        except Exception as exc:  # a sandbox that failed, or a bug of the family's hook
            self._infra(f"{hook.__name__} raised {type(exc).__name__}: {exc}", exc)

    def _infra(self, reason: str, exc: Exception) -> NoReturn:
        """End the episode as an infrastructure error (no grade) and raise it."""
        self._done = True
        verdict = self.with_lineage(Verdict.infra(reason))
        self.verdict = verdict
        self._release()
        raise InfraError(str(exc), verdict=verdict.model_dump(mode="json")) from exc

    def _reject(
        self, action: Any, error: str, start: float, content: str | None, tried: str = ""
    ) -> tuple[str, dict[str, Any]]:
        obs = f"Error: {error}"
        self.trace.append(
            StepRecord(
                call=None,
                raw_action=recorded(action),
                content=content,
                observation=obs,
                error=error,
                tried=tried,
                duration_s=time.monotonic() - start,
                turn=self.turn,
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
                turn=self.turn,
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


@functools.cache
def _family_tools(cls: type[ContainerEnv[Any]]) -> tuple[SchemaTool, ...]:
    """A family's ``tool_schemas`` as specs (checked once per class).

    Raises:
        ConfigError: one of them is not a valid tool schema.
    """
    try:
        return tuple(SchemaTool.of(raw) for raw in cls.tool_schemas)
    except ValueError as exc:
        raise ConfigError(f"{cls.__name__}.tool_schemas: {exc}") from None


def _task_tools(schemas: tuple[dict[str, Any], ...]) -> tuple[SchemaTool, ...]:
    """A task's ``tools`` as specs (each distinct schema checked once)."""
    return tuple(_task_tool(json.dumps(raw, sort_keys=True)) for raw in schemas)


@functools.lru_cache(maxsize=4096)
def _task_tool(text: str) -> SchemaTool:
    return SchemaTool.of(json.loads(text))


def _schema_runner(env: ContainerEnv[Any], name: str) -> Callable[..., str]:
    """The callable of a schema tool: the family's `ContainerEnv.call_tool`."""

    def run(**arguments: Any) -> str:
        return env.call_tool(name, arguments)

    return run


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
