"""ToolAPI: typed tools over a Python backend served in the container (README.md)."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

import gym
import gym.authoring
import gym.errors
import gym.grading
import gym.sandbox
from environments.toolapi._grading import (
    GRADER,
    Gold,
    ToolAPIState,
    grader_version,
    load_gold,
    replay_gold,
    turn_components,
)
from environments.toolapi._service import (
    SERVICE_USER,
    Backend,
    Checkpoint,
    ServiceDown,
    exchange,
    load_request,
)

__all__ = ["Backend", "Checkpoint", "Gold", "ToolAPIEnv", "ToolAPIState"]

HOME = "/var/lib/toolapi"
START = "/opt/toolapi/start.sh"
_TMPFS = {
    "/workspace": "size=8m,uid=1000,gid=1000,mode=0755",
    "/tmp": "size=16m,mode=1777",
    "/home/agent": "size=8m,uid=1000,gid=1000,mode=0755",
    HOME: "size=64m,uid=990,gid=990,mode=0700",
}
SYSTEM_PROMPT = """\
You are an assistant that acts through the tools you are given: they are the only way \
to see or change anything. Do what the user asks in their message with tool calls (you \
may make several in one message), then call `submit` to hand the turn back. The user \
may then write again with a new request; keep going until they stop. Each request is \
checked on its own: make the calls it needs in its own turn, even when an earlier call \
already showed what it asks. Do not ask the user questions: nobody answers them; use \
the tools instead."""
_gold_states = gym.authoring.LRUCache()
"""Gold checkpoints by (env class, grading config, backend, gold calls): replays are
deterministic, so a task's gold is replayed once per process."""


@functools.lru_cache(maxsize=16)
def _modules(folder: str) -> dict[str, str]:
    """The backend modules (``*.py``) of a family's folder, each read as a regular file.

    Raises:
        ConfigError: a module is a symbolic link (never followed) or not a regular file.
    """
    root = Path(folder)
    return {
        p.name: gym.authoring.read_inside(root, p.name).decode() for p in sorted(root.glob("*.py"))
    }


@functools.lru_cache(maxsize=8)
def _tasks(cls: type[ToolAPIEnv], root: str, fingerprint: int) -> list[gym.Task]:
    return gym.authoring.load_tasks(
        Path(root).parent, cls.family, splits=cls.splits, keys=cls.task_keys
    )


def _fingerprint(root: Path) -> int:
    """A hash of the names, sizes and times of a family's task files (cheap to take)."""
    stats = []
    for path in sorted([*root.glob("*/*"), *root.glob("*/hidden/*")]):
        st = path.stat()
        stats.append((str(path), st.st_size, st.st_mtime_ns))
    return hash(tuple(stats))


class BackendTable(BaseModel):
    """A tool-API task's ``[backend]`` table: what the service is loaded with."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    classes: list[str] = Field(min_length=1)
    """The backend classes the tools are methods of (``"module:Class"``)."""
    setup: str = "_load_scenario"
    """The method each class loads the task's state.json with."""
    setup_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments of that method."""


class ToolAPIKeys(gym.authoring.TaskKeys):
    """A tool-API task's task.toml keys."""

    backend: BackendTable


class ToolAPIEnv(gym.ContainerEnv[ToolAPIState]):
    """A user asks, turn after turn; the agent answers with the task's typed tools.

    The backend is a set of Python classes (as BFCL's are): their public methods are the
    tools, described to the agent by the task's JSON schemas (``tools.json``). Each
    episode loads them, from the task's initial state, into a small service that runs in
    the agent's container as its own uid; a tool call is one request to it. The agent has
    no shell. ``submit`` ends a user turn: the backend's state and the turn's results are
    then read (a checkpoint), and the next user message arrives. Graded in a fresh
    container by replaying the gold calls turn by turn (`environments.toolapi._grading`).

    A family on another backend subclasses it and names its ``family`` (tasks under
    seeds/<family>/) and, when the backend's modules are not the ``*.py`` files of
    seeds/<family>/, its `backend_dir`.
    """

    family: ClassVar[str] = "toolapi"
    task_keys: ClassVar[type[gym.authoring.TaskKeys]] = ToolAPIKeys
    image: ClassVar[str] = "toolapi"
    system_prompt: ClassVar[str | None] = SYSTEM_PROMPT
    final_state_type: ClassVar[type[ToolAPIState]] = ToolAPIState
    sandbox_settings: ClassVar[dict[str, Any]] = {
        "memory_mb": 512,
        "pids_limit": 64,
        "tmpfs": _TMPFS,
        "boot": ((SERVICE_USER, START),),
    }
    max_reply: ClassVar[int] = 1 << 20
    """Bytes of a call's reply read back (a longer one is the agent's error)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._checkpoints: list[Checkpoint] = []
        self._service_error = ""

    @classmethod
    def load_tasks(cls) -> list[gym.Task]:
        """The family's tasks (seeds/<family>/), read once per process while unchanged.

        Making an environment loads them (every episode of a validation makes one), and a
        benchmark's tasks carry thousands of tool schemas to check.
        """
        root = cls.seeds_dir() / cls.family
        return _tasks(cls, str(root), _fingerprint(root))

    # -- the backend -----------------------------------------------------------------------

    @classmethod
    def backend_dir(cls) -> Path:
        """The folder whose ``*.py`` files are the backend's modules (seeds/<family>/)."""
        return cls.seeds_dir() / cls.family

    @classmethod
    def backend_modules(cls) -> dict[str, str]:
        """The backend's modules: file name -> source."""
        return _modules(str(cls.backend_dir()))

    @classmethod
    def task_inputs(cls, task: gym.Task) -> list[Path]:
        """The backend's modules: the family's ``*.py`` files, which every task shares."""
        return sorted(cls.backend_dir().glob("*.py"))

    def backend(self, task: gym.Task) -> Backend:
        """What the service is loaded with for a task: classes, initial state, its tools.

        Raises:
            gym.ConfigError: task.toml has no ``[backend]`` table with ``classes``, or the
                task's ``state.json`` is not a JSON object.
        """
        table = task.data.get("backend")
        if not isinstance(table, dict) or not table.get("classes"):
            raise gym.ConfigError(
                f"task {task.id}: task.toml needs a [backend] table with classes = "
                '["module:Class", ...] (the backend classes the tools are methods of)'
            )
        path = task.folder() / "state.json"
        state = json.loads(path.read_text()) if path.is_file() else {}
        if not isinstance(state, dict):
            raise gym.ConfigError(f"{path}: the initial state must be a JSON object")
        return Backend(
            modules=self.backend_modules(),
            classes=list(table["classes"]),
            state=state,
            setup=str(table.get("setup", "_load_scenario")),
            setup_kwargs=dict(table.get("setup_kwargs", {})),
            tools=[_name(t) for t in task.tools],
        )

    # -- the episode -------------------------------------------------------------------------

    def setup(self, task: gym.Task, sandbox: gym.sandbox.Sandbox) -> None:
        """Load the task's backend into the service (started when the container booted)."""
        self._checkpoints, self._service_error = [], ""
        try:
            reply = exchange(sandbox, load_request(self.backend(task)), timeout=60.0)
        except ServiceDown as exc:
            raise gym.errors.SandboxUnavailable(f"the tool-API service: {exc}") from exc
        if reply.get("ok") is not True:
            raise gym.errors.SandboxUnavailable(
                f"the tool-API service could not load {task.id}'s backend: {reply.get('error')}"
            )

    def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        """Run one of the task's tools: a method call on the backend in the container."""
        if self.sandbox is None:
            raise gym.ConfigError("no episode is running: call reset() first")
        request = {"op": "call", "name": name, "arguments": arguments}
        try:
            reply = exchange(
                self.sandbox,
                request,
                timeout=self.command_timeout(),
                max_output=self.max_reply,
                shell=True,
            )
        except ServiceDown as exc:  # after the agent's calls: the agent's, never ours
            return f"Error: the backend did not answer: {exc}"
        if reply.get("ok") is not True:
            return f"Error: {reply.get('error')}"
        return str(reply.get("result", ""))

    def sample_calls(self) -> list[dict[str, Any]]:
        """Calls for ``action_space.sample()``: ``submit`` alone.

        It is the one call no backend state depends on (a backend's tools are the
        dataset's, with unknown effects).
        """
        return [{"name": "submit", "arguments": {}}]

    @gym.tool(kind="final")
    def submit(self) -> str:
        """End your turn: the user reads what you did, and may write again."""
        return "Turn handed back to the user."

    def turn_ended(self, task: gym.Task, sandbox: gym.sandbox.Sandbox, turn: int) -> None:
        """Take the checkpoint of the user turn that just ended (state and results)."""
        checkpoint = self._checkpoint(sandbox)
        if checkpoint is not None:
            self._checkpoints.append(checkpoint)

    def _checkpoint(self, sandbox: gym.sandbox.Sandbox) -> Checkpoint | None:
        if self._service_error:
            return None
        try:
            reply = exchange(sandbox, {"op": "checkpoint"}, timeout=60.0, shell=True)
        except ServiceDown as exc:
            self._service_error = f"the backend stopped answering: {exc}"
            return None
        if reply.get("ok") is not True:
            self._service_error = f"the backend's state could not be read: {reply.get('error')}"
            return None
        try:
            return Checkpoint.model_validate(reply)
        except ValidationError as exc:  # as a reply that is not ok: the turn's state is unread
            self._service_error = f"the backend's state did not read as a checkpoint: {exc}"[:500]
            return None

    def export(self, task: gym.Task, sandbox: gym.sandbox.Sandbox) -> ToolAPIState:
        """The checkpoints of the turns so far (the current turn's taken now if needed).

        A turn's end takes its checkpoint; when the budget ran out mid-turn, it is taken here.
        """
        if len(self._checkpoints) <= self.turn:
            self.turn_ended(task, sandbox, self.turn)
        return ToolAPIState(turns=list(self._checkpoints), error=self._service_error)

    # -- scripted solutions (validation) ----------------------------------------------------

    def gold(self, task: gym.Task) -> Gold:
        """The task's gold calls, one list per user turn, read as an agent's calls are.

        Each call's arguments go through its tool's schema (`read_args`) as an agent's do
        before the backend gets them, so that the gold's backend sees the values an agent's
        would for the same call (``12446.0`` for an ``integer`` is the int 12446 in both).

        Raises:
            gym.ConfigError: the file is missing or malformed, or a gold call names no tool
                of the task or does not match its schema.
        """
        gold = load_gold(task, 1 + len(task.turns))
        table = self.tool_table(task)
        return Gold(turns=[[_read(table, task, call) for call in turn] for turn in gold.turns])

    def oracle_calls(self, task: gym.Task) -> list[gym.ToolCall]:
        """Each turn's gold calls, then ``submit``."""
        submit = gym.ToolCall(name="submit", arguments={})
        return [call for turn in self.gold(task).turns for call in (*turn, submit)]

    def perturbed_calls(self, task: gym.Task) -> list[gym.ToolCall] | None:
        """None: a tool-API backend has no forbidden side effect of its own to plant."""
        return None

    def panel_calls(self, task: gym.Task) -> dict[str, list[gym.ToolCall]]:
        """Policies that do none of the work, all of which must fail.

        ``late``: each turn's gold calls one turn late (the first turn gets none, the
        last turn's are never made). ``probe``: one read-only call without arguments
        (a tool marked ``"x-boxgym-kind": "read"``) in every turn, when the task has one.
        """
        submit = gym.ToolCall(name="submit", arguments={})
        turns = self.gold(task).turns
        late = [submit, *(c for turn in turns[:-1] for c in (*turn, submit))]
        panel = {"late": late}
        probe = _probe(task.tools)
        if probe is not None:
            panel["probe"] = [c for _ in turns for c in (probe, submit)]
        return panel

    # -- grading ----------------------------------------------------------------------------

    def grade(
        self, task: gym.Task, final_state: ToolAPIState, trajectory: Sequence[gym.StepRecord]
    ) -> gym.Verdict:
        """Each user turn against the gold replayed in a fresh container (`turn_components`)."""
        version = grader_version(self.backend_modules(), self.image)
        gold = self.gold(task)
        try:
            expected = self._gold_checkpoints(task, gold)
        except (gym.SandboxError, gym.GradingError) as exc:
            return gym.Verdict.infra(
                f"grading failed: {exc}", grader=GRADER, grader_version=version
            )
        components = turn_components(final_state, expected, gold)
        return gym.grading.compose(components, [], grader=GRADER, version=version)

    def _gold_checkpoints(self, task: gym.Task, gold: Gold) -> list[Checkpoint]:
        """The gold replay's checkpoints, replayed once per process for the same inputs."""
        backend = self.backend(task)
        blob = json.dumps(
            [backend.model_dump(), gold.model_dump(mode="json")], sort_keys=True
        ).encode()
        key = (
            type(self).__qualname__,
            self.grading_config().model_dump_json(),
            hashlib.sha256(blob).hexdigest(),
        )
        cached: list[Checkpoint] | None = _gold_states.get(key)
        if cached is None:  # failures are not kept: the next grading tries again
            cached = self._replay(backend, gold)
            _gold_states.put(key, cached)
        return cached

    def _replay(self, backend: Backend, gold: Gold) -> list[Checkpoint]:
        sandbox = self.sandboxes.grader(self.grading_config())
        try:
            return replay_gold(sandbox, backend, gold, timeout=120.0)
        finally:
            self.sandboxes.release(sandbox)

    def grading_config(self) -> gym.sandbox.SandboxConfig:
        """Settings of the grading container: the episode's (its service, on loopback)."""
        return self.sandbox_config()


def _read(table: dict[str, Any], task: gym.Task, call: gym.ToolCall) -> gym.ToolCall:
    """A gold call with its arguments as its tool's schema reads them."""
    try:
        args, _ = table[call.name][0].read_args(call.arguments)
    except (KeyError, ValueError) as exc:
        raise gym.ConfigError(
            f"task {task.id}: its gold call {call.name}({call.arguments}) is not one an "
            f"agent could make ({exc}): fix hidden/gold.json"
        ) from None
    return call.model_copy(update={"arguments": args})


def _name(schema: dict[str, Any]) -> str:
    """A tool schema's name (OpenAI's ``{"type": "function", "function": {...}}`` or bare)."""
    inner = schema.get("function", schema)
    return str(inner.get("name", ""))


def _probe(tools: Sequence[dict[str, Any]]) -> gym.ToolCall | None:
    """A call of the first read-only tool that needs no argument, if the task has one."""
    for schema in tools:
        inner = schema.get("function", schema)
        kind = schema.get("x-boxgym-kind", inner.get("x-boxgym-kind"))
        required = inner.get("parameters", {}).get("required", [])
        if kind == "read" and not required:
            return gym.ToolCall(name=_name(schema), arguments={})
    return None
