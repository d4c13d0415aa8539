"""Shared serialized models: tasks and verdicts."""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from gym._errors import ConfigError

__all__ = ["Component", "Flag", "Outcome", "Split", "Task", "Verdict", "hash_tree", "load_tasks"]

Split = Literal["train", "eval"]
Outcome = Literal["pass", "fail", "infra_error"]


class Task(BaseModel):
    """One task of an environment family, loaded from seeds/<family>/<task>/task.toml."""

    model_config = ConfigDict(frozen=True)

    id: str
    """Task id, unique within its family."""
    family: str
    """The environment family (the folder name under seeds/)."""
    split: Split = "train"
    """``train`` or ``eval``; eval tasks are never exported for training."""
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
    """Family-specific settings from task.toml."""

    def folder(self) -> Path:
        """The task's folder as a Path."""
        return Path(self.path)


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


def _load_task(family: str, folder: Path) -> Task:
    spec_file = folder / "task.toml"
    try:
        spec = tomllib.loads(spec_file.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{spec_file}: cannot read task spec: {exc}") from exc
    prompt = spec.pop("prompt", None)
    if prompt is None and (folder / "prompt.md").is_file():
        prompt = (folder / "prompt.md").read_text()
    if not prompt:
        raise ConfigError(f"{spec_file}: a task needs a prompt (key 'prompt' or prompt.md)")
    known = {"id", "split", "tags", "allowed_paths"}
    return Task(
        id=spec.get("id", folder.name),
        family=family,
        split=spec.get("split", "train"),
        prompt=prompt,
        tags={"family": family, **spec.get("tags", {})},
        allowed_paths=tuple(spec.get("allowed_paths", ())),
        hidden_hash=hash_tree(folder / "hidden"),
        path=str(folder),
        data={k: v for k, v in spec.items() if k not in known},
    )


def load_tasks(seeds: Path, family: str) -> list[Task]:
    """Every task under seeds/<family>/ (one folder with a task.toml each), sorted by id."""
    root = seeds / family
    if not root.is_dir():
        raise ConfigError(f"no seed folder {root}: create it with `gym env new {family}`")
    tasks = [_load_task(family, d) for d in sorted(root.iterdir()) if (d / "task.toml").is_file()]
    ids = [t.id for t in tasks]
    if len(ids) != len(set(ids)):
        raise ConfigError(f"{root}: task ids repeat")
    return sorted(tasks, key=lambda t: t.id)
