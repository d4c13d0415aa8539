"""Sandboxes, for people who run commands in containers or write a sandbox provider.

`Sandbox` is the interface every environment acts through (exec, a persistent shell,
files, diffs, close). `DockerSandbox` is the hardened container of every real episode,
`LocalSandbox` a temporary folder for unit tests (not a security boundary); an
environment gets its sandboxes from a `SandboxProvider` (`DockerSandboxes`,
`LocalSandboxes`), configured by a `SandboxConfig`::

    >>> from gym.sandbox import DockerSandboxes, SandboxConfig
    >>> with DockerSandboxes() as provider:                                         # doctest: +SKIP
    ...     box = provider.acquire(SandboxConfig(image=provider.image("python")))
    ...     print(box.exec("echo hi").stdout)
    ...     provider.release(box)

A provider owns what it keeps ahead: warm pools of started containers, the controller
that refills them, its counters and its engine gate. A runner talks to it through its
methods (`expect`, `resize`, `counts`, `latency`, `close`); a grading sandbox comes from
`SandboxProvider.grader`, a one-shot grading container from `run_once`. A provider of
your own implements `image`, `acquire` and `run_once`; the rest have defaults.
`default_sandboxes` is the provider environments and runs use unless given one; `reap`
removes the containers of processes that died.

The free functions of the warm pools (`pool_for`, `set_pool_size`, `discard`,
`shutdown_pools`, `container_counts`, `expect_episodes`, `expect_gradings`) are
deprecated: each warns when called and acts on the default provider; use the
provider's methods.
"""

import functools as _functools
import warnings as _warnings
from collections.abc import Callable as _Callable
from typing import Any as _Any
from typing import Literal as _Literal

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
    default_sandboxes,
    quote,
    reap,
    run_once,
)
from gym._sandbox._pool import shutdown as _shutdown

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
    "default_sandboxes",
    "quote",
    "reap",
    "run_once",
]


def _retired(instead: str) -> _Callable[[_Callable[..., _Any]], _Callable[..., _Any]]:
    """A free function made a shim: it warns (DeprecationWarning), then does its work."""

    def wrap(work: _Callable[..., _Any]) -> _Callable[..., _Any]:
        name = work.__name__.lstrip("_")

        @_functools.wraps(work)
        def shim(*args: _Any, **kwargs: _Any) -> _Any:
            _warnings.warn(
                f"gym.sandbox.{name} is deprecated; use {instead} (it acts on the default "
                "provider, gym.sandbox.default_sandboxes()); the old name will be removed",
                DeprecationWarning,
                stacklevel=2,
            )
            return work(*args, **kwargs)

        shim.__name__ = shim.__qualname__ = name
        return shim

    return wrap


@_retired("DockerSandboxes.pool_for (of gym.sandbox.default_sandboxes())")
def _pool_for(config: SandboxConfig, role: _Literal["agent", "grader"] = "agent") -> SandboxPool:
    return default_sandboxes().pool_for(config, role)  # a grader's: settings and image copy


@_retired("SandboxProvider.resize")
def _set_pool_size(size: int) -> None:
    default_sandboxes().resize(size)


@_retired("SandboxProvider.release")
def _discard(sandbox: Sandbox) -> None:
    default_sandboxes().release(sandbox)


@_retired("SandboxProvider.close (this one ends every provider's pools, for process exit)")
def _shutdown_pools() -> None:
    _shutdown()


@_retired("SandboxProvider.counts")
def _container_counts() -> dict[str, int]:
    return default_sandboxes().counts()


@_retired("SandboxProvider.expect(episodes=...)")
def _expect_episodes(pending: int | None) -> None:
    default_sandboxes().pools.demand.expect(pending)


@_retired("SandboxProvider.expect(gradings=...)")
def _expect_gradings(queued: int) -> None:
    default_sandboxes().expect(gradings=queued)


_RETIRED = {
    shim.__name__: shim
    for shim in (
        _pool_for,
        _set_pool_size,
        _discard,
        _shutdown_pools,
        _container_counts,
        _expect_episodes,
        _expect_gradings,
    )
}
"""The warm pools' free functions: shims that warn, then act on the default provider."""


def __getattr__(name: str) -> _Any:
    """A retired free function (it warns when called)."""
    if name not in _RETIRED:
        raise AttributeError(f"module 'gym.sandbox' has no attribute {name!r}")
    return _RETIRED[name]
