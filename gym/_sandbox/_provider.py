"""Sandbox providers: the one object an environment gets its sandboxes from.

An environment never creates containers itself. It asks its provider for the image
reference of its family (`SandboxProvider.image`), for a sandbox at the start of an
episode (`acquire`, given back with `release`), for a grading sandbox (`grader`) and for
one-shot commands in a fresh grading container (`run_once`, how code is graded).
Swapping the provider swaps the engine:

- `DockerSandboxes`: hardened Docker containers from warm pools (the default).
- `LocalSandboxes`: a temporary folder and local subprocesses, for unit tests only (not
  a security boundary; refused unless ``allow_unsafe=True``).

What a provider hands out only has to honour the `Sandbox` interface, and it is only
given back through `release`. That leaves a provider free to start a container lazily
(a sandbox whose container starts at its first command, while the policy thinks) and
to keep warm pools per role (``agent``, ``grader``), refilled by one controller,
without any change to the environments.

A provider owns what it keeps, as an HTTP transport owns its connection pool: the runner
talks to it only through its methods. It tells the provider the demand to come
(`expect`) and the concurrency (`resize`), reads what it started (`counts`) and the
engine's load (`latency`), and `close` lets it all go. Each has a default that does
nothing, so a provider that keeps nothing implements only `image`, `acquire` and
`run_once`.
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Callable, Sequence
from typing import Any, Literal

from gym._core._errors import UnsafeConfig
from gym._sandbox._base import Sandbox
from gym._sandbox._config import SandboxConfig
from gym._sandbox._grading_image import grading_image
from gym._sandbox._lazy import LazySandbox
from gym._sandbox._local import LocalSandbox
from gym._sandbox._once import graded, one_shot
from gym._sandbox._pool import Pools, SandboxPool, discard
from gym._sandbox._stream import ExecResult

__all__ = [
    "DockerSandboxes",
    "LocalSandboxes",
    "Role",
    "SandboxProvider",
    "default_sandboxes",
    "run_once",
]

Role = Literal["agent", "grader"]
"""What a sandbox is for: the agent's episode, or grading where the agent never was."""


class SandboxProvider(abc.ABC):
    """Where sandboxes come from: images, sandboxes for agents and graders, one-shot runs.

    A runner also tells it what is coming (`expect`, `resize`) and reads it (`counts`,
    `latency`); those default to doing nothing, for a provider that keeps nothing ahead.
    A provider is a context manager: leaving it calls `close`.
    """

    @abc.abstractmethod
    def image(self, name: str) -> str:
        """The reference sandboxes of an image folder start from (built on demand).

        Args:
            name: the image's name (a folder under images/ or a registered image).
        """

    @abc.abstractmethod
    def acquire(
        self, config: SandboxConfig, *, run: str = "adhoc", role: Role = "agent"
    ) -> Sandbox:
        """A fresh sandbox, ready to use, that no one else has used.

        Args:
            config: the settings (image, limits, mounts, boot steps).
            run: the run it serves (a label).
            role: ``agent`` for an episode, ``grader`` for grading (prefer `grader`,
                which gives it the grading settings).

        Raises:
            SandboxUnavailable: no sandbox could be started.
            EngineUnavailable: the engine does not answer.
        """

    def release(self, sandbox: Sandbox) -> None:
        """Give a sandbox back when done with it; it is never handed out again."""
        sandbox.close()

    def grader(self, config: SandboxConfig, *, run: str = "grading") -> Sandbox:
        """A fresh grading sandbox, booted, where no agent ever was; give it back with `release`.

        The one way to get a grading sandbox: ``config`` (the family's image, mounts and
        boot steps) with the grading settings (used once, by the harness only, no
        network but its own loopback), acquired in the ``grader`` role.

        Args:
            config: the settings (image, limits, mounts, boot steps).
            run: the run it serves (a label).

        Raises:
            UnsafeConfig: the config has a network.
            SandboxUnavailable: no sandbox could be started.
        """
        return self.acquire(graded(config), run=run, role="grader")

    @abc.abstractmethod
    def run_once(
        self,
        config: SandboxConfig,
        argv: Sequence[str],
        *,
        stdin: bytes | None = None,
        timeout: float = 60.0,
        max_output: int = 1 << 20,
        run: str = "adhoc",
    ) -> ExecResult:
        """Run ``argv`` once in a fresh grading sandbox that is removed afterwards.

        Args:
            config: the sandbox settings (boot steps are ignored), given the grading
                settings as for `grader`.
            argv: the command.
            stdin: bytes streamed to the command's standard input, then closed.
            timeout: seconds before the sandbox is removed, whatever it is doing.
            max_output: bytes kept per stream (head and tail).
            run: the run it serves (a label).
        """

    def expect(  # noqa: B027 - optional hook: a provider that keeps nothing ahead ignores it
        self, *, episodes: int | None = None, gradings: int | None = None
    ) -> None:
        """Hear what is still to come, to keep ahead no more than that (nothing by default).

        Args:
            episodes: episodes still to begin (None: no news).
            gradings: episodes that gave their sandbox back and wait for a grading slot
                (None: no news); each still takes a grading sandbox.
        """

    def resize(self, size: int) -> None:  # noqa: B027 - optional hook, as `expect`
        """Keep at most ``size`` sandboxes ready per config (the run's concurrency).

        Nothing by default: a provider that keeps none ahead has nothing to resize.
        """

    def counts(self) -> dict[str, int]:
        """Sandboxes started so far, by role and how (``agent.cold``, ``grader.spare``...).

        Empty by default (a provider that does not count them).
        """
        return {}

    def latency(self) -> float | None:
        """The engine's load: median seconds of its recent costly operations (None: unknown).

        The runner's adaptive concurrency backs off as it grows. None by default.
        """
        return None

    def close(self) -> None:  # noqa: B027 - optional hook, as `expect`
        """Let go of everything kept ahead (spares, workers); nothing by default.

        Sandboxes handed out stay usable until released; later calls start afresh.
        """

    def __enter__(self) -> SandboxProvider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class DockerSandboxes(SandboxProvider):
    """Hardened Docker containers: warm pools for `acquire`, one-shot containers for grading.

    An agent's sandbox is lazy (`LazySandbox`): its container, taken from the warm pool,
    starts when the first command needs it, so an episode without tool calls starts
    none. Grading containers come from their own warm pools, filled by the same
    controller (see `gym._sandbox._pool`).

    Each provider owns its warm pools, the controller that fills them, their demand, its
    container counters and its engine gate (`pools`); two providers share none of them.
    `close` it when done with it (or use it as a context manager); pools used after that
    start afresh. Pickled, it arrives as a fresh provider with the same settings, one per
    process (a Ray worker builds its own this way).

    Args:
        resolve_image: turns an image name into a reference (the environments' default
            builds the image on first use and returns its digest); names are used as
            they are without one.
        lazy: hand agents lazy sandboxes (the default); False starts each at `acquire`.
        pool_size: sandboxes kept ready per config until `resize` (``$GYM_POOL_SIZE``,
            else 1, by default).
        engine_slots: costly engine operations at once (``$GYM_ENGINE_SLOTS``, else the
            CPUs, by default).
    """

    def __init__(
        self,
        resolve_image: Callable[[str], str] | None = None,
        *,
        lazy: bool = True,
        pool_size: int | None = None,
        engine_slots: int | None = None,
    ) -> None:
        self._resolve = resolve_image
        self._lazy = lazy
        self._settings = (resolve_image, lazy, pool_size, engine_slots)
        self.pools = Pools(pool_size, slots=engine_slots)
        """Its warm pools, with their controller, demand, counters and engine gate."""

    def __reduce__(self) -> tuple[Callable[..., DockerSandboxes], tuple[Any, ...]]:
        return _in_this_process, self._settings

    def image(self, name: str) -> str:
        """The image's reference (its digest when a resolver builds it)."""
        return self._resolve(name) if self._resolve else name

    def acquire(
        self, config: SandboxConfig, *, run: str = "adhoc", role: Role = "agent"
    ) -> Sandbox:
        """A sandbox whose container comes from this provider's warm pool of its config.

        For ``role="agent"`` the sandbox is lazy: the container is taken when the first
        command needs it; a ``grader`` gets the grading settings (see `grader`). Pooled
        containers carry the pool's labels (``boxgym.run=pool``).
        """
        if role != "agent" or not self._lazy:
            return self.pool_for(config, role).acquire()
        demand = self.pools.demand
        demand.opened()
        return LazySandbox(
            config,
            start=lambda: self.pool_for(config, role).acquire(on_take=demand.started),
            release=discard,
            on_close=lambda started: demand.closed_one(started=started),
        )

    def pool_for(self, config: SandboxConfig, role: Role = "agent") -> SandboxPool:
        """The warm pool of a config and role (made on first use), for benchmarks and tests.

        A ``grader`` pool's sandboxes have the grading settings (`grader`).
        """
        return self.pools.pool_for(_grading(config) if role == "grader" else config, role)

    def release(self, sandbox: Sandbox) -> None:
        """Remove the container in the background."""
        discard(sandbox)

    def run_once(
        self,
        config: SandboxConfig,
        argv: Sequence[str],
        *,
        stdin: bytes | None = None,
        timeout: float = 60.0,
        max_output: int = 1 << 20,
        run: str = "adhoc",
    ) -> ExecResult:
        """``argv`` as the main process of a fresh grading container (see `_once.one_shot`)."""
        return one_shot(
            self.pools,
            _grading(config),
            argv,
            stdin=stdin,
            timeout=timeout,
            max_output=max_output,
            run=run,
        )

    def expect(self, *, episodes: int | None = None, gradings: int | None = None) -> None:
        """Size the warm pools by the episodes and gradings still to come."""
        if episodes is not None:
            self.pools.demand.expect(episodes)
        if gradings is not None:
            self.pools.demand.queue(gradings)

    def resize(self, size: int) -> None:
        """Keep at most ``size`` spares per pool (surplus ones are removed)."""
        self.pools.resize(size)

    def counts(self) -> dict[str, int]:
        """Containers this provider started: on demand, as spares, spares used or dropped."""
        return self.pools.counts.snapshot()

    def latency(self) -> float | None:
        """The median duration of its engine gate's recent operations."""
        return self.pools.gate.latency()

    def close(self) -> None:
        """Let every spare go (the engine removes it) and stop refilling."""
        self.pools.close(fast=True)


def _grading(config: SandboxConfig) -> SandboxConfig:
    """``config`` with the grading settings, from its image's grading copy (`grading_image`)."""
    return graded(config).model_copy(update={"image": grading_image(config.image)})


_rebuilt: dict[tuple[Any, ...], DockerSandboxes] = {}
_rebuilt_lock = threading.Lock()


def _in_this_process(*settings: Any) -> DockerSandboxes:
    """The provider with these settings that unpickling made in this process (one each)."""
    with _rebuilt_lock:
        provider = _rebuilt.get(settings)
        if provider is None:
            resolve_image, lazy, pool_size, engine_slots = settings
            provider = _rebuilt[settings] = DockerSandboxes(
                resolve_image, lazy=lazy, pool_size=pool_size, engine_slots=engine_slots
            )
        return provider


_default: DockerSandboxes | None = None
_default_lock = threading.Lock()


def default_sandboxes() -> DockerSandboxes:
    """The default provider: hardened Docker containers, images built on first use.

    One per process, made on first use; environments and runs without a provider of
    their own use it.
    """
    global _default
    with _default_lock:
        if _default is None:
            from gym._sandbox._images import ensure_image  # the image builder, when needed

            _default = DockerSandboxes(resolve_image=ensure_image)
        return _default


class LocalSandboxes(SandboxProvider):
    """Local folders and subprocesses standing in for containers: unit tests only.

    NOT A SECURITY BOUNDARY: commands run on this machine as the current user, with no
    limits. Use it for trusted, scripted episodes (tests of env, limit, resume and
    runner logic), never for a model's actions.

    Args:
        allow_unsafe: must be True; the provider refuses to exist otherwise.

    Raises:
        UnsafeConfig: ``allow_unsafe`` was not given.
    """

    def __init__(self, *, allow_unsafe: bool = False) -> None:
        if not allow_unsafe:
            raise UnsafeConfig(
                "LocalSandboxes runs commands on this machine with no isolation; it is for "
                "unit tests of trusted code only: pass allow_unsafe=True to use it"
            )

    def image(self, name: str) -> str:
        """``local:<name>`` (there is no image: commands run on this machine)."""
        return f"local:{name}"

    def acquire(
        self, config: SandboxConfig, *, run: str = "adhoc", role: Role = "agent"
    ) -> Sandbox:
        """A fresh temporary folder standing in for the container."""
        return LocalSandbox(config)

    def run_once(
        self,
        config: SandboxConfig,
        argv: Sequence[str],
        *,
        stdin: bytes | None = None,
        timeout: float = 60.0,
        max_output: int = 1 << 20,
        run: str = "adhoc",
    ) -> ExecResult:
        """``argv`` run in a fresh temporary folder (its workdir), which is then deleted."""
        with LocalSandbox(graded(config)) as box:
            return box.exec(argv, stdin=stdin, timeout=timeout, max_output=max_output)


def run_once(
    config: SandboxConfig,
    argv: Sequence[str],
    *,
    stdin: bytes | None = None,
    timeout: float = 60.0,
    max_output: int = 1 << 20,
    run: str = "adhoc",
    pooled: bool = True,
) -> ExecResult:
    """Run ``argv`` once in a fresh grading container of the default provider.

    Args:
        config: the sandbox settings (boot steps are ignored), given the grading settings.
        argv: the command, the container's main process.
        stdin: bytes streamed to the command's standard input, then closed.
        timeout: seconds before the container is removed, whatever it is doing.
        max_output: bytes kept per stream (head and tail).
        run: value of the ``boxgym.run`` label.
        pooled: take a container started ahead, waiting for its input, when one is
            ready (only for a command that reads its input before anything else);
            False always starts one.
    """
    pools = default_sandboxes().pools
    return one_shot(
        pools,
        config,
        argv,
        stdin=stdin,
        timeout=timeout,
        max_output=max_output,
        run=run,
        pooled=pooled,
    )
