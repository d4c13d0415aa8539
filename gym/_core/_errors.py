"""The one exception tree of boxgym.

Every error boxgym raises derives from `GymError`; errors from Docker, HTTP and the
database are mapped into this tree with ``raise ... from``. Messages say what went
wrong and what to do about it. The command line prints one as a single line and exits
with its class's ``exit_code``: 2 when what the command line names is wrong or absent
(``ConfigError``, ``StoreError``: an option, an environment, a task, a run, the store),
1 when the work failed (the engine, a container, a grader, a model, a database that
cannot be reached: ``StoreUnavailable``)::

    GymError
     ├── ConfigError            bad input or configuration (fix the call or the file)
     │    ├── EnvNotFound       unknown environment id (closest ids suggested)
     │    ├── IdTaken           an id another package holds, or the reserved boxgym/ namespace
     │    ├── HeldOutError      held-out (evaluation-only) tasks asked for as training data
     │    ├── TaskNotFound      unknown task id for an environment
     │    └── UnsafeConfig      a sandbox setting that would weaken isolation
     ├── SandboxError           anything about containers
     │    ├── EngineUnavailable the Docker engine does not answer
     │    ├── ImageError        an image is missing or failed to build
     │    ├── SandboxUnavailable the container vanished or died (not a failed command)
     │    ├── ExecTimeout       a harness-side operation ran out of time
     │    ├── ExportTooLarge    files to export exceed their size cap
     │    │    └── UnreadableState   files the agent made unreadable to itself
     │    └── UnsafeArchive     an archive from a container tried to escape
     ├── InfraError             an episode could not be completed or graded for reasons
     │                          outside the agent's control; carries the infra verdict
     ├── GradingError           a grader crashed or could not produce a report
     ├── PolicyError            a policy (model endpoint) failed
     └── StoreError             the run store failed
          └── StoreUnavailable  the database cannot be reached, or the connection dropped
"""

from __future__ import annotations

from typing import Any, ClassVar

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


class GymError(Exception):
    """Root of every error raised by boxgym."""

    exit_code: ClassVar[int] = 1
    """The status `gym` exits with on this error: 1, the work failed."""


class ConfigError(GymError):
    """Bad input or configuration: fix the call, the flag or the file named."""

    exit_code: ClassVar[int] = 2
    """A usage error: the command line (or a file it names) must change."""


class EnvNotFound(ConfigError):
    """No environment is registered under the requested id."""


class IdTaken(ConfigError):
    """An environment id is held by another package, or lies in the reserved namespace."""


class HeldOutError(ConfigError):
    """Tasks of a held-out split were asked for as training data."""


class TaskNotFound(ConfigError):
    """The environment has no task with the requested id."""


class UnsafeConfig(ConfigError):
    """A sandbox setting would weaken isolation (privileged, host namespaces, ...)."""


class SandboxError(GymError):
    """Something went wrong with a container or the engine."""


class EngineUnavailable(SandboxError):
    """The Docker engine does not answer."""


class ImageError(SandboxError):
    """An image is missing, invalid or failed to build."""


class SandboxUnavailable(SandboxError):
    """The container vanished or died; distinct from a command that failed."""


class ExecTimeout(SandboxError):
    """A harness-side operation in a container ran out of time."""


class ExportTooLarge(SandboxError):
    """Files to copy out of a container exceed their size cap."""


class UnreadableState(ExportTooLarge):
    """Files the agent made unreadable to its own user cannot be copied out whole.

    As a state too large, the agent's doing: a copy without them (a fork's) would not be
    the state it left.
    """


class UnsafeArchive(SandboxError):
    """An archive read from a container holds an entry that could escape its root."""


class InfraError(GymError):
    """An episode could not be run or graded for reasons outside the agent's control.

    Such an episode has no reward: it is retried or excluded, and always counted.

    Attributes:
        verdict: the ``infra_error`` verdict as a dict, when one was produced.
        final_state: the exported final state (JSON), when the export succeeded and
            grading then failed; it is stored so that the episode can be regraded.
    """

    def __init__(
        self,
        message: str,
        *,
        verdict: dict[str, Any] | None = None,
        final_state: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.verdict = verdict
        self.final_state = final_state


class GradingError(GymError):
    """A grader crashed or could not produce its structured report."""


class PolicyError(GymError):
    """A policy (model endpoint or local model) failed after its retries."""


class StoreError(GymError):
    """The run store could not read or write, or holds no run (or store) asked for."""

    exit_code: ClassVar[int] = 2
    """Nearly always a run id, episode id or ``--db`` that names nothing: a usage error."""


class StoreUnavailable(StoreError):
    """The database cannot be reached, or its connection dropped (after the retries).

    The work failed, not the command line: once the server answers again, the same
    command run again resumes the run where it stopped.
    """

    exit_code: ClassVar[int] = 1
    """A failure of the work (the database), not of the command line."""
