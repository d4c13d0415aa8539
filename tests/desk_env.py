"""A toy family whose tools are JSON schemas and whose tasks have several user turns.

`DeskEnv` keeps notes in ``notes.json`` in its sandbox. Its tools are declared as data
(`ContainerEnv.tool_schemas`: ``put`` and ``get``, run by `DeskEnv.call_tool`) beside one
method tool, ``submit``; `DeskEnv.turn_ended` snapshots the notes at the end of every
user turn, and the grade compares the notes after each turn with the task's ``after``
list. Local sandboxes by default (commands run on this machine: trusted tests only);
``sandboxes=`` a Docker provider runs the same family in real containers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, Field

import gym
import gym.grading
import gym.sandbox
from gym.sandbox import Sandbox

LOCAL = gym.sandbox.LocalSandboxes(allow_unsafe=True)
NOTES = "notes.json"


def _schema(name: str, description: str, kind: str, **props: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {k: {"type": t} for k, t in props.items()},
                "required": list(props),
            },
            "x-boxgym-kind": kind,
        },
    }


PUT = _schema("put", "Store a note under a key.", "write", key="string", value="string")
GET = _schema("get", "Read the note of a key.", "read", key="string")
COUNT = {"name": "count", "description": "How many notes there are.", "x-boxgym-kind": "read"}
TIMES = _schema("times", "Store a number n times under a key.", "write", key="string", n="integer")


class DeskState(BaseModel):
    """The notes at the end, and after each user turn."""

    notes: dict[str, str] = Field(default_factory=dict)
    after: list[dict[str, str]] = Field(default_factory=list)


def task(task_id: str, prompt: str, after: list[dict[str, str]], **fields: Any) -> gym.Task:
    """A desk task: ``after`` is the notes expected at the end of each user turn."""
    data = {"after": after, **fields.pop("data", {})}
    return gym.Task(id=task_id, family="desk", prompt=prompt, data=data, **fields)


TASKS = [
    task("one", "Store a=1.", [{"a": "1"}]),
    task("two", "Store a=1.", [{"a": "1"}, {"a": "1", "b": "2"}], turns=["Now store b=2."]),
    task(
        "three",
        "Store a=1.",
        [{"a": "1"}, {"a": "1", "b": "2"}, {"a": "1", "b": "2", "c": "3"}],
        turns=["Now store b=2.", "Now store c=3."],
    ),
    task(
        "own",
        "Store x three times, then count.",
        [{"x": "333"}],
        tools=[COUNT, TIMES],
        drop_tools=["get"],
        lenient=True,
        data={"system_prompt": "You are a careful clerk."},
    ),
]


class DeskEnv(gym.ContainerEnv[DeskState]):
    """Notes in a sandbox, tools declared as JSON schemas, one or more user turns."""

    family: ClassVar[str] = "desk"
    image: ClassVar[str] = "python"
    final_state_type: ClassVar[type[BaseModel]] = DeskState
    system_prompt: ClassVar[str | None] = "You keep notes at a desk."
    tool_schemas: ClassVar[tuple[dict[str, Any], ...]] = (PUT, GET)

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("sandboxes", LOCAL)
        super().__init__(**kwargs)
        self.after: list[dict[str, str]] = []

    @classmethod
    def load_tasks(cls) -> list[gym.Task]:
        return list(TASKS)

    def setup(self, task: gym.Task, sandbox: Sandbox) -> None:
        self.after = []
        sandbox.write_file(NOTES, b"{}")

    def _notes(self) -> dict[str, str]:
        assert self.sandbox is not None
        notes: dict[str, str] = json.loads(self.sandbox.read_file(NOTES))
        return notes

    def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        notes = self._notes()
        if name == "get":
            return notes.get(arguments["key"], "(none)")
        if name == "count":
            return str(len(notes))
        value = arguments.get("value") or str(arguments.get("n", ""))
        notes[arguments["key"]] = value * int(arguments.get("n", 1)) if name == "times" else value
        assert self.sandbox is not None
        self.sandbox.write_file(NOTES, json.dumps(notes).encode())
        return "stored"

    def turn_ended(self, task: gym.Task, sandbox: Sandbox, turn: int) -> None:
        assert turn == len(self.after), "turns end in order, each once"
        self.after.append(json.loads(sandbox.read_file(NOTES)))

    @gym.tool(kind="final")
    def submit(self) -> str:
        """End your turn."""
        return "Submitted."

    def export(self, task: gym.Task, sandbox: Sandbox) -> DeskState:
        return DeskState(notes=json.loads(sandbox.read_file(NOTES)), after=self.after)

    def grade(
        self, task: gym.Task, final_state: DeskState, trajectory: Sequence[gym.StepRecord]
    ) -> gym.Verdict:
        expected = task.data["after"]
        passed = final_state.after == expected
        component = gym.Component(
            score=float(passed), passed=passed, explanation=f"{final_state.after} vs {expected}"
        )
        return gym.grading.compose({"turns": component}, [], grader="desk", version="1")

    def oracle_calls(self, task: gym.Task) -> list[gym.ToolCall]:
        calls: list[gym.ToolCall] = []
        before: dict[str, str] = {}
        for notes in task.data["after"]:
            for key, value in notes.items():
                if before.get(key) != value:
                    calls.append(gym.ToolCall(name="put", arguments={"key": key, "value": value}))
            calls.append(gym.ToolCall(name="submit"))
            before = notes
        return calls

    def perturbed_calls(self, task: gym.Task) -> list[gym.ToolCall] | None:
        return None
