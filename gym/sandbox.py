"""Sandboxes, for people who run commands in containers or write a sandbox provider.

`Sandbox` is the interface every environment acts through (exec, a persistent shell,
files, diffs, close). `DockerSandbox` is the hardened container of every real episode,
`LocalSandbox` a temporary folder for unit tests (not a security boundary); an
environment gets its sandboxes from a `SandboxProvider` (`DockerSandboxes`,
`LocalSandboxes`), configured by a `SandboxConfig`::

    >>> from gym.sandbox import DockerSandboxes, SandboxConfig
    >>> provider = DockerSandboxes()
    >>> box = provider.acquire(SandboxConfig(image=provider.image("python")))  # doctest: +SKIP
    >>> box.exec("echo hi").stdout                                              # doctest: +SKIP
    >>> provider.release(box)                                                   # doctest: +SKIP

Warm pools (`pool_for`, `set_pool_size`, `discard`, `shutdown_pools`) keep containers
started ahead of episodes; `reap` removes the containers of processes that died.
"""

from gym._sandbox import (
    Change,
    DockerSandbox,
    DockerSandboxes,
    ExecResult,
    LazySandbox,
    LocalSandbox,
    LocalSandboxes,
    Manifest,
    Sandbox,
    SandboxConfig,
    SandboxPool,
    SandboxProvider,
    container_counts,
    discard,
    pool_for,
    quote,
    reap,
    run_once,
    set_pool_size,
    shutdown_pools,
)

__all__ = [
    "Change",
    "DockerSandbox",
    "DockerSandboxes",
    "ExecResult",
    "LazySandbox",
    "LocalSandbox",
    "LocalSandboxes",
    "Manifest",
    "Sandbox",
    "SandboxConfig",
    "SandboxPool",
    "SandboxProvider",
    "container_counts",
    "discard",
    "pool_for",
    "quote",
    "reap",
    "run_once",
    "set_pool_size",
    "shutdown_pools",
]
