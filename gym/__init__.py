"""boxgym: a containerized agent-trajectory eval gym.

Gymnasium environments over hardened Docker containers holding a code repository, a
database or a tool API; graders that check the final state where the agent never was;
a run store, statistics and training on verified episodes.

    >>> import gym, gymnasium
    >>> env = gymnasium.make("boxgym/PyRepo-v0")          # doctest: +SKIP
    >>> obs, info = env.reset(seed=0)                      # doctest: +SKIP

Do not install the unrelated legacy ``gym`` package in the same environment: both
use the import name ``gym``.
"""

from importlib.metadata import PackageNotFoundError, version

from gym._code import CodeEnv, grade_code, read_tree, task_files
from gym._env import ContainerEnv, StepRecord
from gym._errors import (
    ConfigError,
    EngineUnavailable,
    EnvNotFound,
    ExecTimeout,
    GradingError,
    GymError,
    ImageError,
    InfraError,
    PolicyError,
    SandboxError,
    SandboxUnavailable,
    StoreError,
    TaskNotFound,
    UnsafeArchive,
    UnsafeConfig,
)
from gym._grading import CheckSpec, Export, compose
from gym._images import build_image, ensure_image, list_images
from gym._models import Component, Flag, Task, Verdict, load_tasks
from gym._registry import EnvInfo, env_ids, envs, load_plugins, make, register, register_builtin
from gym._sandbox import ExecResult, Sandbox, SandboxConfig, SandboxPool, reap, set_pool_size
from gym._spaces import TextSpace, ToolCallSpace
from gym._tools import ToolCall, ToolSpec, tool
from gym._wrappers import EpisodeLimits

try:
    __version__ = version("boxgym")
except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
    __version__ = "0.0.0"

DISTRIBUTION = "boxgym"

__all__ = [
    "DISTRIBUTION",
    "CheckSpec",
    "CodeEnv",
    "Component",
    "ConfigError",
    "ContainerEnv",
    "EngineUnavailable",
    "EnvInfo",
    "EnvNotFound",
    "EpisodeLimits",
    "ExecResult",
    "ExecTimeout",
    "Export",
    "Flag",
    "GradingError",
    "GymError",
    "ImageError",
    "InfraError",
    "PolicyError",
    "Sandbox",
    "SandboxConfig",
    "SandboxError",
    "SandboxPool",
    "SandboxUnavailable",
    "StepRecord",
    "StoreError",
    "Task",
    "TaskNotFound",
    "TextSpace",
    "ToolCall",
    "ToolCallSpace",
    "ToolSpec",
    "UnsafeArchive",
    "UnsafeConfig",
    "Verdict",
    "__version__",
    "build_image",
    "compose",
    "ensure_image",
    "env_ids",
    "envs",
    "grade_code",
    "list_images",
    "load_plugins",
    "load_tasks",
    "make",
    "read_tree",
    "reap",
    "register",
    "register_builtin",
    "set_pool_size",
    "task_files",
    "tool",
]

register_builtin()
load_plugins()
