"""The whole exception tree, for code that catches boxgym's errors.

Every error boxgym raises derives from `GymError`; the tree, with what each one means
and what to do about it, is drawn in the docstring of `gym._core._errors`::

    >>> import gym.errors
    >>> issubclass(gym.errors.SandboxUnavailable, gym.errors.SandboxError)
    True

The most common ones (`GymError`, `ConfigError`, `SandboxError`, `GradingError`,
`PolicyError`, `InfraError`) are also at the top level, as ``gym.GymError`` and so on.
"""

from gym._core._errors import (
    ConfigError,
    EngineUnavailable,
    EnvNotFound,
    ExecTimeout,
    ExportTooLarge,
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
    StoreUnavailable,
    TaskNotFound,
    UnreadableState,
    UnsafeArchive,
    UnsafeConfig,
)

__all__ = [
    "ConfigError",
    "EngineUnavailable",
    "EnvNotFound",
    "ExecTimeout",
    "ExportTooLarge",
    "GradingError",
    "GymError",
    "HeldOutError",
    "IdTaken",
    "ImageError",
    "InfraError",
    "PolicyError",
    "SandboxError",
    "SandboxUnavailable",
    "StoreError",
    "StoreUnavailable",
    "TaskNotFound",
    "UnreadableState",
    "UnsafeArchive",
    "UnsafeConfig",
]
