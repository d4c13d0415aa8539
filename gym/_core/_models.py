"""Shared serialized models: tasks and verdicts."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shlex
import tomllib
import typing
from collections.abc import Iterable, Mapping, Sequence
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
from pydantic.fields import FieldInfo

from gym._core._errors import ConfigError
from gym._core._schemas import function_schema
from gym._core._tree import LINK_RULE, link_problem, tree_entries

__all__ = [
    "DEFAULT_SPLITS",
    "Component",
    "Flag",
    "Outcome",
    "Split",
    "SplitUse",
    "Task",
    "TaskKeys",
    "TaskList",
    "Verdict",
    "hash_tree",
    "check_task_keys",
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


class TaskKeys(BaseModel):
    """The schema of a family's task.toml keys: what ends in ``Task.data``.

    Beside these, task.toml holds the fields of `Task` (id, split, prompt, tags...).

    A family declares its own keys by subclassing this model (its class attribute
    ``task_keys``); a key it does not declare, or a value of the wrong type, is a problem
    of the task file when it is loaded, never a check that silently disappears. Values
    are checked strictly (``"120"`` is no number, ``"bash"`` no list) and kept in
    ``Task.data`` as the file wrote them.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    system_prompt: str = ""
    """The task's own system prompt, replacing its family's."""
    panel_exempt: dict[str, str] = Field(default_factory=dict)
    """Panel policies this task exempts, each with the reason (see `gym env validate`)."""

    def folder_problems(self, folder: Path) -> list[str]:
        """What is wrong between these keys and the task's other files (none by default).

        A family overrides it to check what its keys name in the task's folder (a check
        function, a file); each problem says what is wrong and how to fix it.
        """
        return []


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
    """sha256 over the files of a folder (relative paths and contents); '' if absent.

    No link is followed: a link counts as its own text (where it points), a fifo or a
    device as its name; a tree of regular files hashes as it always did.
    """
    if not (folder.is_dir() or folder.is_symlink()):
        return ""
    h = hashlib.sha256()
    for rel, kind, data in tree_entries(folder):
        if kind == "file":
            h.update(rel.encode() + b"\0")
            h.update(hashlib.sha256(data).digest())
        else:  # a path never starts with NUL: no file's entry reads the same
            h.update(b"\0" + kind.encode() + b"\0" + rel.encode() + b"\0" + data + b"\0")
    return h.hexdigest()


_LINKS_KEPT = "files"
"""The task folder whose links are the agent's: copied into the workspace as links and
never followed (the shell family's initial tree, see `gym.grading.tree_archive`)."""


def _unsafe_entry(folder: Path) -> str:
    """Why a task folder cannot be read as regular files: its first link ('' if none).

    Task data is read only from inside the task's folder: a symbolic link anywhere in it
    (but under ``files/``, kept as a link) or a fifo or device makes the task a problem.
    """
    if folder.is_symlink():
        return (
            f"{folder} is a symbolic link: {LINK_RULE}; put the task's folder itself in "
            "its family's folder"
        )
    for rel, kind, _ in tree_entries(folder, contents=False, prune=_LINKS_KEPT.__eq__):
        if kind != "file":
            return f"{folder}: {link_problem(rel, kind)}"
    return ""


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


def _field_problem(
    spec_file: Path, exc: ValidationError, schema: type[BaseModel] | None = None
) -> ConfigError:
    """Every error of a task file, each as ``key = value: what is wrong (what is allowed)``.

    ``schema``, the model the file's keys were checked against, names the keys allowed
    where an unknown one was found and the type a wrong value should have.
    """
    parts = []
    for err in exc.errors():
        loc = err["loc"]
        key = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
        shown = repr(err.get("input"))
        shown = shown if len(shown) <= 200 else shown[:200] + "..."
        if err["type"] == "extra_forbidden":
            inner = _model_at(schema, loc[:-1])
            allowed = ", ".join(sorted(_names(inner))) if inner else ""
            parts.append(f"{key} = {shown}: unknown key (allowed: {allowed or 'none'})")
        elif err["type"] == "missing":
            parts.append(f"{key}: missing, a required key")
        else:
            typed = err["type"] not in ("value_error", "literal_error", "assertion_error")
            wanted = _expected(schema, loc) if typed else ""
            msg = err["msg"].removeprefix("Value error, ")
            parts.append(f"{key} = {shown}: {msg}" + (f" (expected {wanted})" if wanted else ""))
    return ConfigError(f"{spec_file}: " + "; ".join(parts))


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    """The model an annotation holds (``X``, ``list[X]``, ``X | None``), if any."""
    for _ in range(4):
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return annotation
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if not args:
            return None
        annotation = args[-1]
    return None


def _names(model: type[BaseModel]) -> dict[str, FieldInfo]:
    """A model's fields by the key a file writes (its alias, if it has one)."""
    return {f.alias or name: f for name, f in model.model_fields.items()}


def _model_at(schema: Any, loc: Sequence[Any]) -> type[BaseModel] | None:
    """The model that holds the keys at ``loc`` inside ``schema`` (None: not a model)."""
    here: Any = schema
    for part in loc:
        if isinstance(part, int):
            continue
        if typing.get_origin(here) is dict:  # a table of any names: the name is the part
            here = typing.get_args(here)[1]
            continue
        model = _inner_model(here)
        field = _names(model).get(str(part)) if model else None
        if field is None:
            return None
        here = field.annotation
    return _inner_model(here)


def _expected(schema: Any, loc: Sequence[Any]) -> str:
    """The declared type of the key at ``loc`` in words (``list[str]``), or ''."""
    if schema is None or not loc or isinstance(loc[-1], int):
        return ""
    holder = _model_at(schema, loc[:-1])
    field = _names(holder).get(str(loc[-1])) if holder else None
    if field is None:
        return ""
    annotation = field.annotation
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return "a table" if issubclass(annotation, BaseModel) else annotation.__name__
    return re.sub(r"\b(typing|pathlib|datetime)\.|<class '([^']+)'>", r"\2", str(annotation))


def check_task_keys(spec_file: Path, data: Mapping[str, Any], keys: type[TaskKeys]) -> None:
    """Check a task file's family keys against the family's schema, then its folder.

    Raises:
        ConfigError: an unknown key, a value of the wrong type, or a key that does not
            agree with the task's files; the message names the file, each key, its value
            and what is allowed.
    """
    try:
        checked = keys.model_validate(dict(data))
    except ValidationError as exc:
        raise _field_problem(spec_file, exc, keys) from None
    if problems := checked.folder_problems(spec_file.parent):
        raise ConfigError(f"{spec_file}: " + "; ".join(problems))


def _load_task(
    family: str,
    folder: Path,
    splits: Mapping[str, SplitUse],
    keys: type[TaskKeys] | None = None,
) -> Task:
    """One task from its folder.

    ``keys`` is the family's schema of its keys; None: not checked here (a dataset
    importer reading back what it wrote: the family checks them as it loads).

    Raises:
        ConfigError: what is wrong with the task file (file, key, value, what is allowed).
    """
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
    data = {k: v for k, v in spec.items() if k not in _KNOWN}
    if keys is not None:
        check_task_keys(spec_file, data, keys)
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
            allowed_paths=spec.get("allowed_paths", ()),
            hidden_hash=hash_tree(folder / "hidden"),
            path=str(folder),
            data=data,
            **added,
        )
    except ValidationError as exc:
        raise _field_problem(spec_file, exc, Task) from exc


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
    seeds: Path,
    family: str,
    *,
    splits: Mapping[str, SplitUse] | None = None,
    keys: type[TaskKeys] | None = None,
) -> TaskList:
    """Every task under seeds/<family>/ (one folder with a task.toml each), in id order.

    Ids are ordered naturally (`natural_key`: ``t2`` before ``t10``). A task that cannot
    be loaded (unreadable TOML, a bad field, an undeclared split, a repeated id) is left
    out with a warning, and its problem is kept in the result's ``problems``.

    Args:
        seeds: the folder holding ``<family>/``.
        family: the family's folder name.
        splits: the family's splits and their roles (``train``/``eval`` by default).
        keys: the schema of the family's own task.toml keys (its class's ``task_keys``);
            an unknown key or a wrong value leaves the task out with its problem. None:
            they are not checked here (the graders check the keys they read).

    Raises:
        ConfigError: there is no ``seeds/<family>/`` folder at all.
    """
    root = seeds / family
    if not root.is_dir():
        new = shlex.join(["gym", "env", "new", family])
        raise ConfigError(f"no seed folder {root}: create it with `{new}`")
    allowed = dict(splits) if splits is not None else DEFAULT_SPLITS
    tasks: dict[str, Task] = {}
    problems: list[str] = []
    for folder in sorted(root.iterdir()):
        if not ((folder / "task.toml").is_file() or (folder / "task.toml").is_symlink()):
            continue
        if problem := _unsafe_entry(folder):
            problems.append(problem)
            continue
        try:
            task = _load_task(family, folder, allowed, keys)
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
