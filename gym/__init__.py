"""boxgym: a containerized agent-trajectory eval gym.

Gymnasium environments over hardened Docker containers holding a code repository, a
database or a tool API; graders that check the final state where the agent never was;
a run store, statistics and training on verified episodes.

    >>> import gym, gymnasium
    >>> env = gymnasium.make("boxgym/PyRepo-v0")          # doctest: +SKIP
    >>> obs, info = env.reset(seed=0)                      # doctest: +SKIP

The top level holds the words most users say; the rest lives in public submodules,
each for one audience (docs/api.md lists them all):

- `gym.authoring`: writing environment families (tools, spaces, limits, task files).
- `gym.sandbox`: containers and sandbox providers; `gym.images`: their images.
- `gym.grading`: exports of final state, graders, flags, the LLM judge.
- `gym.policies`: every policy, and `policy_from_name`.
- `gym.runs`: running, reporting, comparing and regrading benchmarks from Python.
- `gym.datasets`: importing datasets as tasks.
- `gym.train`: training on environment rewards (and which tasks may be trained on).
- `gym.errors`: the whole exception tree.

Names that used to be at the top level still resolve there (``gym.quote``), with a
DeprecationWarning naming their new home.

Do not install the unrelated legacy ``gym`` package in the same environment: both
use the import name ``gym``.
"""

import importlib as _importlib
import os as _os
import signal as _signal
import sys as _sys
import warnings as _warnings
from typing import Any as _Any

if _os.path.basename(_sys.argv[0] if _sys.argv else "") == "gym":
    # The console script: a Ctrl-C while the package loads (about a second) leaves with
    # 130 and no traceback; `gym._cli.main` puts Python's own handler back.
    _signal.signal(_signal.SIGINT, lambda *_: _os._exit(130))

# gymnasium imports numpy, whose OpenBLAS starts a thread per core that spins for about
# 2**28 cycles before it sleeps: about 0.1 CPU-s in every process that imports boxgym,
# 5% of a short benchmark run on 2 cores. Spinning 2**4 cycles instead keeps BLAS
# threaded and wastes nothing (a value set by the user is left alone).
_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

from gym._core._startup import collector_paused as _collector_paused  # noqa: E402

with _collector_paused():  # 13% of the import's CPU otherwise (gym/_core/_startup.py)
    from gym._core._errors import (
        ConfigError,
        GradingError,
        GymError,
        InfraError,
        PolicyError,
        SandboxError,
    )
    from gym._core._models import Component, Flag, Task, Verdict, load_tasks
    from gym._core._tools import ToolCall, tool
    from gym._core._version import __version__
    from gym._envs._code import CodeEnv
    from gym._envs._env import ContainerEnv, StepRecord
    from gym._envs._registry import env_ids, envs, make, register
    from gym._envs._registry import load_plugins as _load_plugins
    from gym._envs._registry import register_local as _register_local
    from gym._policy import (
        LocalPolicy,
        NoopPolicy,
        OpenAIPolicy,
        OraclePolicy,
        Policy,
        ScriptPolicy,
    )
    from gym._run._rollout import EpisodeResult, run_episode

__all__ = [
    "CodeEnv",
    "Component",
    "ConfigError",
    "ContainerEnv",
    "EpisodeResult",
    "Flag",
    "GradingError",
    "GymError",
    "InfraError",
    "LocalPolicy",
    "NoopPolicy",
    "OpenAIPolicy",
    "OraclePolicy",
    "Policy",
    "PolicyError",
    "SandboxError",
    "ScriptPolicy",
    "StepRecord",
    "Task",
    "ToolCall",
    "Verdict",
    "__version__",
    "env_ids",
    "envs",
    "load_tasks",
    "make",
    "register",
    "run_episode",
    "tool",
]

_SUBMODULES = (
    "authoring",
    "datasets",
    "errors",
    "grading",
    "images",
    "policies",
    "redteam",
    "runs",
    "sandbox",
    "serve",
    "train",
)
"""The public submodules, loaded on first use (``gym.runs`` works after ``import gym``)."""

_MOVED: dict[str, str] = {
    # name -> its public home (the top level kept them before the layered API)
    "Change": "gym.sandbox",
    "CheckSpec": "gym.grading",
    "DockerSandboxes": "gym.sandbox",
    "EngineUnavailable": "gym.errors",
    "EnvInfo": "gym.authoring",
    "EnvNotFound": "gym.errors",
    "EpisodeLimits": "gym.authoring",
    "HeldOutError": "gym.errors",
    "IdTaken": "gym.errors",
    "ExecResult": "gym.sandbox",
    "ExecTimeout": "gym.errors",
    "Export": "gym.grading",
    "ImageError": "gym.errors",
    "Judge": "gym.grading",
    "LRUCache": "gym.authoring",
    "LocalSandboxes": "gym.sandbox",
    "Manifest": "gym.sandbox",
    "PerturbedOraclePolicy": "gym.policies",
    "SYSTEM_PROMPT": "gym.runs",
    "Sandbox": "gym.sandbox",
    "SandboxConfig": "gym.sandbox",
    "SandboxPool": "gym.sandbox",
    "SandboxProvider": "gym.sandbox",
    "SandboxUnavailable": "gym.errors",
    "StoreError": "gym.errors",
    "TaskCheck": "gym.runs",
    "TaskNotFound": "gym.errors",
    "TextSpace": "gym.authoring",
    "ToolCallSpace": "gym.authoring",
    "ToolSpec": "gym.authoring",
    "Turn": "gym.policies",
    "UnsafeArchive": "gym.errors",
    "UnsafeConfig": "gym.errors",
    "build_image": "gym.images",
    "compose": "gym.grading",
    "discard": "gym.sandbox",
    "ensure_image": "gym.images",
    "env_of": "gym.authoring",
    "export_workspace": "gym.grading",
    "grade_code": "gym.grading",
    "grader_config": "gym.grading",
    "image_dir": "gym.images",
    "list_images": "gym.images",
    "load_plugins": "gym.authoring",
    "matches": "gym.grading",
    "policy_from_name": "gym.policies",
    "pool_for": "gym.sandbox",
    "quote": "gym.sandbox",
    "read_tree": "gym.authoring",
    "reap": "gym.sandbox",
    "refuse_held_out": "gym.train",
    "register_image": "gym.images",
    "register_local": "gym.authoring",
    "set_pool_size": "gym.sandbox",
    "tool_calls": "gym.authoring",
    "training_tasks": "gym.train",
    "validate_env": "gym.runs",
}
"""Names removed from the top level, by the public module that holds them now."""


_RETIRED: dict[str, tuple[str, str]] = {
    # name -> (where its value lives now: module, or module:name when renamed, what to use)
    "DISTRIBUTION": ("gym._core._version", "the string 'boxgym', the distribution's name"),
    "split_role": ("gym.train:split_use", "gym.train.split_use (renamed: a split's use)"),
    "task_files": (
        "gym.authoring:workspace_files",
        "gym.authoring.workspace_files (renamed: a task's workspace files)",
    ),
}
"""Removed names, and what to use instead (docs/architecture.md, "Names": the renamed)."""


def __getattr__(name: str) -> _Any:
    """A public submodule on first use, or a moved name (with a DeprecationWarning)."""
    if name in _SUBMODULES:
        return _importlib.import_module(f"gym.{name}")
    attr = name
    if name in _MOVED:
        home = _MOVED[name]
        advice = f"moved to {home}.{name}; import it from there (`from {home} import {name}`)"
    elif name in _RETIRED:
        home, instead = _RETIRED[name]
        home, _, new = home.partition(":")
        attr, advice = new or name, f"is deprecated; use {instead}"
    else:
        raise AttributeError(f"module 'gym' has no attribute {name!r}")
    _warnings.warn(
        f"gym.{name} {advice}; the old name will be removed", DeprecationWarning, stacklevel=2
    )
    return getattr(_importlib.import_module(home), attr)


def __dir__() -> list[str]:
    return sorted({*__all__, *_SUBMODULES})


with _collector_paused():  # they import the environment families
    _register_local()
    _load_plugins()
