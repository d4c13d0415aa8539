"""Shared serialized models: tasks and verdicts."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    computed_field,
    field_validator,
    model_serializer,
)

from gym._core._errors import ConfigError
from gym._core._schemas import function_schema

__all__ = [
    "DEFAULT_SPLITS",
    "Component",
    "Flag",
    "Outcome",
    "Split",
    "SplitUse",
    "Task",
    "TaskList",
    "Verdict",
    "hash_tree",
    "load_tasks",
    "natural_key",
]

log = logging.getLogger("gym.tasks")

Split = str
"""A split name (``train``, ``eval``, ``validation``...); its family declares its use."""
SplitUse = Literal["training", "held-out"]
"""What a split may be used for: training data, or evaluation only (never a training record)."""
DEFAULT_SPLITS: dict[str, SplitUse] = {"train": "training", "eval": "held-out"}
"""The splits of a family that declares none."""
Outcome = Literal["pass", "fail", "infra_error"]
_RUNS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[Any, ...]:
    """Sort key that orders digit runs by value: ``MBPP/2`` before ``MBPP/10``.

    Text runs compare as they are (case-sensitive), so ids without digits keep their
    plain string order; the text itself breaks ties (``a01`` and ``a1``).
    """
    parts = _RUNS.split(text)
    return (tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), text)


class Task(BaseModel):
    """One task of an environment family, loaded from seeds/<family>/<task>/task.toml."""

    model_config = ConfigDict(frozen=True)

    id: str
    """Task id, unique within its family."""
    family: str
    """The environment family (the folder name under seeds/)."""
    split: Split = "train"
    """Split name; the family declares each split's role, and held-out tasks are never
    exported for training."""
    prompt: str
    """What the agent is asked to do."""
    tags: dict[str, str] = Field(default_factory=dict)
    """Slice tags: difficulty, skill, and any other the task declares."""
    allowed_paths: tuple[str, ...] = ()
    """Glob patterns (relative to the workspace) the agent may change."""
    hidden_hash: str = ""
    """Content hash of the task's hidden checks (its bank version)."""
    path: str = ""
    """Folder of the task under seeds/."""
    data: dict[str, Any] = Field(default_factory=dict)
    """Family-specific settings from task.toml (``system_prompt`` among them: the task's
    own system prompt, overriding its family's)."""
    turns: tuple[str, ...] = ()
    """Scripted user messages that follow the first one (`prompt`), in order: the agent
    ends each user turn with the final tool (``submit``), the next message then arrives."""
    tools: tuple[dict[str, Any], ...] = ()
    """Tools of this task beside its family's, each an OpenAI function schema (canonical
    form, see `gym._core._schemas.function_schema`); one of a family tool's name replaces
    it. task.toml ``[[tools]]`` tables, or a ``tools.json`` list in the task's folder."""
    drop_tools: tuple[str, ...] = ()
    """Names of inherited tools this task removes (never the final tool)."""
    lenient: bool = False
    """Argument validation of the schema tools: strict (an unknown argument, a missing
    required one or a wrong JSON type is a rejected step) or lenient (values coerced where
    nothing is lost, ``"3"`` -> ``3``; unknown arguments dropped, with a note)."""
    user: str = ""
    """The scenario a simulated user plays (who it is, what it wants, what it knows);
    empty: no simulated user."""

    @field_validator("tools", mode="before")
    @classmethod
    def _schemas(cls, value: Any) -> Any:
        if not isinstance(value, list | tuple):
            return value
        found: list[dict[str, Any]] = []
        for i, raw in enumerate(value):
            try:
                found.append(function_schema(raw))
            except ValueError as exc:
                raise ValueError(f"tools[{i}]: {exc}") from None
        names = [t["function"]["name"] for t in found]
        if twice := sorted({n for n in names if names.count(n) > 1}):
            raise ValueError(f"tools: {twice} declared more than once; name each tool once")
        return tuple(found)

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The task as data, without the fields added since tasks were first stored.

        Each is left out at its default: an unchanged task dumps (and hashes) as before.
        """
        data: dict[str, Any] = handler(self)
        for name, default in _ADDED.items():
            value = data.get(name, default)
            if value == default or (isinstance(value, list) and not value):
                data.pop(name, None)
        return data

    def folder(self) -> Path:
        """The task's folder as a Path."""
        return Path(self.path)


_ADDED: dict[str, Any] = {"turns": (), "tools": (), "drop_tools": (), "lenient": False, "user": ""}
"""Task fields added after tasks were first stored and hashed, with their defaults."""


class Component(BaseModel):
    """One scored part of a verdict."""

    score: float
    """Score in [0, 1]."""
    passed: bool
    """Whether this component counts as passed."""
    gated: bool = True
    """A gated component must pass for the episode to pass."""
    weight: float = 1.0
    """Weight in the reward of non-gated (partial-credit) components."""
    explanation: str = ""
    """Why it scored what it did, for people reading the verdict."""


class Flag(BaseModel):
    """A forbidden side effect or tamper signal found in an episode."""

    name: str
    """Flag kind, for example ``outside_allowed_paths`` or ``tests_touched``."""
    detail: str = ""
    """What exactly was seen (a path, a command)."""
    gating: bool = True
    """A gating flag fails the episode; a non-gating one only stops it being verified."""


class Verdict(BaseModel):
    """The outcome of grading one episode, with its lineage."""

    outcome: Outcome
    """``pass``, ``fail`` or ``infra_error``."""
    reward: float | None
    """The reward; None for ``infra_error``, which never becomes 0 or 1."""
    components: dict[str, Component] = Field(default_factory=dict)
    """Named scored parts."""
    flags: list[Flag] = Field(default_factory=list)
    """Forbidden side effects and tamper signals."""
    reason: str = ""
    """Why the outcome is what it is (always set for ``infra_error``)."""
    grader: str = ""
    """Grader name."""
    grader_version: str = ""
    """Grader version (a hash of the grader's code and rubric)."""
    hidden_hash: str = ""
    """Content hash of the hidden checks used."""
    image_digest: str = ""
    """Image the episode and its grading ran on."""
    env_id: str = ""
    """Environment id, for example ``boxgym/PyRepo-v0``."""
    task_id: str = ""
    """Task id."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def verified(self) -> bool:
        """Passed with no flags at all: the only episodes fit for training."""
        return self.outcome == "pass" and not self.flags

    @classmethod
    def infra(cls, reason: str, **lineage: Any) -> Verdict:
        """An ``infra_error`` verdict (no reward) with its reason."""
        return cls(outcome="infra_error", reward=None, reason=reason, **lineage)


def hash_tree(folder: Path) -> str:
    """sha256 over the files of a folder (relative paths and contents); '' if absent."""
    if not folder.is_dir():
        return ""
    h = hashlib.sha256()
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(file.relative_to(folder).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(file.read_bytes()).digest())
    return h.hexdigest()


class TaskList(list[Task]):
    """Tasks of a family, plus what was wrong with the ones that could not be loaded.

    A bad task never takes the others down: it is left out and its problem (file,
    field, value and what is allowed) is kept in `problems`.
    """

    def __init__(self, tasks: Iterable[Task] = (), problems: Iterable[str] = ()) -> None:
        super().__init__(tasks)
        self.problems: list[str] = list(problems)
        """One message per task left out."""


_KNOWN = {"id", "split", "tags", "allowed_paths", *_ADDED}
_TOOLS_FILE = "tools.json"


def _field_problem(spec_file: Path, exc: ValidationError) -> ConfigError:
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err["loc"])
    shown = repr(err.get("input"))
    shown = shown if len(shown) <= 200 else shown[:200] + "..."
    return ConfigError(f"{spec_file}: {field} = {shown}: {err['msg']}")


def _load_task(family: str, folder: Path, splits: Mapping[str, SplitUse]) -> Task:
    spec_file = folder / "task.toml"
    try:
        spec = tomllib.loads(spec_file.read_text())
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{spec_file}: cannot read task spec: {exc}") from exc
    prompt = spec.pop("prompt", None)
    if prompt is None and (folder / "prompt.md").is_file():
        prompt = (folder / "prompt.md").read_text()
    if not prompt:
        raise ConfigError(f"{spec_file}: a task needs a prompt (key 'prompt' or prompt.md)")
    split = spec.get("split", "train")
    if split not in splits:
        raise ConfigError(
            f"{spec_file}: split = {split!r} is not a split of family {family!r}; "
            f"allowed: {', '.join(repr(s) for s in splits)} (a family declares its splits "
            "and their roles in its `splits`; see docs/authoring.md)"
        )
    tags = spec.get("tags", {})
    if not isinstance(tags, dict):
        raise ConfigError(f'{spec_file}: tags = {tags!r} must be a table ([tags] key = "value")')
    if not isinstance(spec.get("system_prompt", ""), str):
        raise ConfigError(f"{spec_file}: system_prompt must be a string")
    added = {k: spec[k] for k in _ADDED if k in spec}
    if tools := _tools_file(folder, spec_file, "tools" in spec):
        added["tools"] = tools
    try:
        return Task(
            id=spec.get("id", folder.name),
            family=family,
            split=split,
            prompt=prompt,
            tags={"family": family, **tags},
            allowed_paths=tuple(spec.get("allowed_paths", ())),
            hidden_hash=hash_tree(folder / "hidden"),
            path=str(folder),
            data={k: v for k, v in spec.items() if k not in _KNOWN},
            **added,
        )
    except ValidationError as exc:
        raise _field_problem(spec_file, exc) from exc


def _tools_file(folder: Path, spec_file: Path, in_toml: bool) -> list[Any] | None:
    """The task's tools.json (a JSON list of tool schemas), if it has one."""
    file = folder / _TOOLS_FILE
    if not file.is_file():
        return None
    if in_toml:
        raise ConfigError(
            f"{spec_file}: tools are declared both in task.toml and in {_TOOLS_FILE}; "
            "keep one of them"
        )
    try:
        tools = json.loads(file.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{file}: cannot read the tools: {exc}") from exc
    if not isinstance(tools, list):
        raise ConfigError(f"{file}: must hold a JSON list of tool schemas")
    return tools


_warned: set[str] = set()


def _warn(problem: str) -> None:
    if problem not in _warned:  # once per process: listing and making both load tasks
        _warned.add(problem)
        log.warning("%s (task left out)", problem)


def load_tasks(
    seeds: Path, family: str, *, splits: Mapping[str, SplitUse] | None = None
) -> TaskList:
    """Every task under seeds/<family>/ (one folder with a task.toml each), in id order.

    Ids are ordered naturally (`natural_key`: ``t2`` before ``t10``). A task that cannot
    be loaded (unreadable TOML, a bad field, an undeclared split, a repeated id) is left
    out with a warning, and its problem is kept in the result's ``problems``.

    Args:
        seeds: the folder holding ``<family>/``.
        family: the family's folder name.
        splits: the family's splits and their roles (``train``/``eval`` by default).

    Raises:
        ConfigError: there is no ``seeds/<family>/`` folder at all.
    """
    root = seeds / family
    if not root.is_dir():
        raise ConfigError(f"no seed folder {root}: create it with `gym env new {family}`")
    allowed = dict(splits) if splits is not None else DEFAULT_SPLITS
    tasks: dict[str, Task] = {}
    problems: list[str] = []
    for folder in sorted(root.iterdir()):
        if not (folder / "task.toml").is_file():
            continue
        try:
            task = _load_task(family, folder, allowed)
        except ConfigError as exc:
            problems.append(str(exc))
            continue
        if task.id in tasks:
            problems.append(
                f"{folder / 'task.toml'}: id = {task.id!r} is already the id of "
                f"{tasks[task.id].path}; task ids must be unique within a family"
            )
            continue
        tasks[task.id] = task
    for problem in problems:
        _warn(problem)
    return TaskList(sorted(tasks.values(), key=lambda t: natural_key(t.id)), problems)
