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

from gym._cache import LRUCache
from gym._code import CodeEnv, grade_code, read_tree, task_files
from gym._env import ContainerEnv, StepRecord, env_of, tool_calls
from gym._errors import (
    ConfigError,
    EngineUnavailable,
    EnvNotFound,
    ExecTimeout,
    GradingError,
    GymError,
    HeldOutError,
    IdTaken,
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
from gym._grading import (
    CheckSpec,
    Export,
    Judge,
    compose,
    export_workspace,
    grader_config,
    matches,
)
from gym._images import build_image, ensure_image, image_dir, list_images, register_image
from gym._models import Component, Flag, Task, Verdict, load_tasks
from gym._policy import (
    LocalPolicy,
    NoopPolicy,
    OpenAIPolicy,
    OraclePolicy,
    PerturbedOraclePolicy,
    Policy,
    ScriptPolicy,
    Turn,
    policy_from_name,
)
from gym._registry import (
    EnvInfo,
    env_ids,
    envs,
    load_plugins,
    make,
    register,
    register_local,
)
from gym._rollout import SYSTEM_PROMPT, EpisodeResult, run_episode
from gym._sandbox import (
    Change,
    DockerSandboxes,
    ExecResult,
    LocalSandboxes,
    Manifest,
    Sandbox,
    SandboxConfig,
    SandboxPool,
    SandboxProvider,
    discard,
    pool_for,
    quote,
    reap,
    set_pool_size,
)
from gym._spaces import TextSpace, ToolCallSpace
from gym._splits import refuse_held_out, split_role, training_tasks
from gym._tools import ToolCall, ToolSpec, tool
from gym._validate import TaskCheck, validate_env
from gym._version import DISTRIBUTION, __version__
from gym._wrappers import EpisodeLimits

__all__ = [
    "Change",
    "CheckSpec",
    "CodeEnv",
    "Component",
    "ConfigError",
    "ContainerEnv",
    "DISTRIBUTION",
    "DockerSandboxes",
    "EngineUnavailable",
    "EnvInfo",
    "EnvNotFound",
    "EpisodeLimits",
    "EpisodeResult",
    "ExecResult",
    "ExecTimeout",
    "Export",
    "Flag",
    "GradingError",
    "GymError",
    "HeldOutError",
    "IdTaken",
    "ImageError",
    "InfraError",
    "Judge",
    "LRUCache",
    "LocalPolicy",
    "LocalSandboxes",
    "Manifest",
    "NoopPolicy",
    "OpenAIPolicy",
    "OraclePolicy",
    "PerturbedOraclePolicy",
    "Policy",
    "PolicyError",
    "SYSTEM_PROMPT",
    "Sandbox",
    "SandboxConfig",
    "SandboxError",
    "SandboxPool",
    "SandboxProvider",
    "SandboxUnavailable",
    "ScriptPolicy",
    "StepRecord",
    "StoreError",
    "Task",
    "TaskCheck",
    "TaskNotFound",
    "TextSpace",
    "ToolCall",
    "ToolCallSpace",
    "ToolSpec",
    "Turn",
    "UnsafeArchive",
    "UnsafeConfig",
    "Verdict",
    "__version__",
    "build_image",
    "compose",
    "discard",
    "ensure_image",
    "env_ids",
    "env_of",
    "envs",
    "export_workspace",
    "grade_code",
    "grader_config",
    "image_dir",
    "list_images",
    "load_plugins",
    "load_tasks",
    "make",
    "matches",
    "policy_from_name",
    "pool_for",
    "quote",
    "read_tree",
    "reap",
    "refuse_held_out",
    "register",
    "register_image",
    "register_local",
    "run_episode",
    "set_pool_size",
    "split_role",
    "task_files",
    "tool",
    "tool_calls",
    "training_tasks",
    "validate_env",
]

register_local()
load_plugins()
