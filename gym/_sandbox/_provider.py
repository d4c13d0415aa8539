"""Sandbox providers: the one object an environment gets its sandboxes from.

An environment never creates containers itself. It asks its provider for the image
reference of its family (`SandboxProvider.image`), for a sandbox at the start of an
episode and for grading (`acquire`, given back with `release`), and for one-shot
commands in a fresh sandbox (`run_once`, how code is graded). Swapping the provider
swaps the engine:

- `DockerSandboxes`: hardened Docker containers from warm pools (the default).
- `LocalSandboxes`: a temporary folder and local subprocesses, for unit tests only (not
  a security boundary; refused unless ``allow_unsafe=True``).

What a provider hands out only has to honour the `Sandbox` interface, and it is only
given back through `release`. That leaves a provider free to start a container lazily
(a sandbox whose container starts at its first command, while the policy thinks) and
to keep warm pools per role (``agent``, ``grader``), refilled by one controller,
without any change to the environments.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import Literal

from gym._core._errors import UnsafeConfig
from gym._sandbox._base import Sandbox
from gym._sandbox._config import SandboxConfig
from gym._sandbox._lazy import LazySandbox
from gym._sandbox._local import LocalSandbox
from gym._sandbox._once import run_once
from gym._sandbox._pool import demand, discard, pool_for
from gym._sandbox._stream import ExecResult

__all__ = ["DockerSandboxes", "LocalSandboxes", "Role", "SandboxProvider"]

Role = Literal["agent", "grader"]
"""What a sandbox is for: the agent's episode, or grading where the agent never was."""


class SandboxProvider(abc.ABC):
    """Where sandboxes come from: images, sandboxes for agents and graders, one-shot runs."""

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
            role: ``agent`` for an episode, ``grader`` for grading.

        Raises:
            SandboxUnavailable: no sandbox could be started.
            EngineUnavailable: the engine does not answer.
        """

    def release(self, sandbox: Sandbox) -> None:
        """Give a sandbox back when done with it; it is never handed out again."""
        sandbox.close()

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
        """Run ``argv`` once in a fresh sandbox that is removed afterwards.

        Args:
            config: the sandbox settings (boot steps are ignored).
            argv: the command.
            stdin: bytes streamed to the command's standard input, then closed.
            timeout: seconds before the sandbox is removed, whatever it is doing.
            max_output: bytes kept per stream (head and tail).
            run: the run it serves (a label).
        """


class DockerSandboxes(SandboxProvider):
    """Hardened Docker containers: warm pools for `acquire`, one-shot containers for grading.

    An agent's sandbox is lazy (`LazySandbox`): its container, taken from the warm pool,
    starts when the first command needs it, so an episode without tool calls starts
    none. Grading containers come from their own warm pools, filled by the same
    controller (see `gym._sandbox._pool`).

    Args:
        resolve_image: turns an image name into a reference (the environments' default
            builds the image on first use and returns its digest); names are used as
            they are without one.
        lazy: hand agents lazy sandboxes (the default); False starts each at `acquire`.
    """

    def __init__(
        self, resolve_image: Callable[[str], str] | None = None, *, lazy: bool = True
    ) -> None:
        self._resolve = resolve_image
        self._lazy = lazy

    def image(self, name: str) -> str:
        """The image's reference (its digest when a resolver builds it)."""
        return self._resolve(name) if self._resolve else name

    def acquire(
        self, config: SandboxConfig, *, run: str = "adhoc", role: Role = "agent"
    ) -> Sandbox:
        """A sandbox whose container comes from the process-wide warm pool of its config.

        For ``role="agent"`` the sandbox is lazy: the container is taken when the first
        command needs it. Pooled containers carry the pool's labels (``boxgym.run=pool``).
        """
        if role != "agent" or not self._lazy:
            return pool_for(config, role).acquire()
        demand.opened()
        return LazySandbox(
            config,
            start=lambda: pool_for(config, role).acquire(on_take=demand.started),
            release=discard,
            on_close=lambda started: demand.closed_one(started=started),
        )

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
        """``argv`` as the main process of a fresh hardened container (see `run_once`)."""
        return run_once(config, argv, stdin=stdin, timeout=timeout, max_output=max_output, run=run)


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
        with LocalSandbox(config) as box:
            return box.exec(argv, stdin=stdin, timeout=timeout, max_output=max_output)
