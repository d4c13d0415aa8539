"""Switches that weaken boxgym on purpose, for tests only: the suite must then fail.

Each is a context manager that changes how containers are created (or how grading
stages its files) for the duration of a test, without touching the validated settings.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from gym._grading import _checks as code_grading
from gym._sandbox import SandboxConfig, _config, client, default_sandboxes
from gym._sandbox._engine import labels
from gym._sandbox._images import ensure_image


@contextlib.contextmanager
def agent_containers(change: Callable[[dict[str, Any]], None]) -> Iterator[None]:
    """Change the creation arguments of every agent container (not grading ones)."""
    real = SandboxConfig.create_kwargs

    def patched(self: SandboxConfig, labels: dict[str, str], command: Any) -> Any:
        kwargs = real(self, labels, command)
        if not self.disposable:
            change(kwargs)
        return kwargs

    default_sandboxes().resize(0)  # no ready container made before the change may serve the test
    try:
        with mock.patch.object(SandboxConfig, "create_kwargs", patched):
            yield
    finally:
        default_sandboxes().resize(0)  # nor one made during it serve a later test
        default_sandboxes().resize(1)


def network_on() -> contextlib.AbstractContextManager[None]:
    """Agent containers on Docker's default bridge: a route to the host and beyond."""
    return agent_containers(lambda kw: kw.update(network_mode="bridge"))


def capability_added() -> contextlib.AbstractContextManager[None]:
    """Agent containers keep CAP_SYS_ADMIN (mount, namespaces...)."""
    return agent_containers(lambda kw: kw.update(cap_add=["SYS_ADMIN"]))


def seccomp_off() -> contextlib.AbstractContextManager[None]:
    """Agent containers without a seccomp filter."""
    return agent_containers(
        lambda kw: kw.update(security_opt=[*kw["security_opt"], "seccomp=unconfined"])
    )


@contextlib.contextmanager
def engine_seccomp() -> Iterator[None]:
    """Containers under the engine's default seccomp profile instead of boxgym's (which
    admits 32-bit system calls, ptrace and io_uring)."""
    default_sandboxes().resize(0)
    try:
        with mock.patch("gym._sandbox._seccomp.apply", lambda args, engine: args):
            yield
    finally:
        default_sandboxes().resize(0)
        default_sandboxes().resize(1)


@contextlib.contextmanager
def keeper_reachable() -> Iterator[None]:
    """Containers whose profile lets a process change any process's limits, priority and
    scheduling class (as the engine's default does), its keeper's among them."""
    from gym._sandbox import _seccomp

    default_sandboxes().resize(0)
    _seccomp.profile.cache_clear()
    try:
        with mock.patch.dict(_seccomp._OWN, dict.fromkeys(_seccomp._OWN, ())):
            yield
    finally:
        _seccomp.profile.cache_clear()
        default_sandboxes().resize(0)
        default_sandboxes().resize(1)


@contextlib.contextmanager
def keeper_dumpable() -> Iterator[None]:
    """Agent containers whose keeper skips making itself non-dumpable (the agent, its own
    uid, can then read and write its memory and descriptors)."""
    from gym._sandbox import _keeper

    weak = _keeper.SOURCE.replace(b"        dumpable(0)\n", b"        pass\n")
    assert weak != _keeper.SOURCE, "the keeper no longer calls dumpable(0) this way"
    default_sandboxes().resize(0)
    try:
        with mock.patch.object(_keeper, "SOURCE", weak):
            yield
    finally:
        default_sandboxes().resize(0)
        default_sandboxes().resize(1)


@contextlib.contextmanager
def ipc_unbounded() -> Iterator[None]:
    """Containers (grading ones too) without the IPC sysctls: the kernel's defaults in a
    private IPC namespace, where System V shared memory is unbounded."""
    default_sandboxes().resize(0)  # no container started ahead may serve the test
    try:
        with mock.patch.dict(_config._IPC_SYSCTLS, clear=True):
            yield
    finally:
        default_sandboxes().resize(0)
        default_sandboxes().resize(1)


@contextlib.contextmanager
def inodes_unbounded() -> Iterator[None]:
    """Containers (grading ones too) with their tmpfs mounts as given and the engine's
    /dev/shm: no bound on their inodes, so none on the names and extended attributes the
    kernel keeps for them."""
    default_sandboxes().resize(0)  # no container started ahead may serve the test
    try:
        with mock.patch.object(_config.SandboxConfig, "mounts", lambda self: dict(self.tmpfs)):
            yield
    finally:
        default_sandboxes().resize(0)
        default_sandboxes().resize(1)


def host_pids() -> contextlib.AbstractContextManager[None]:
    """Agent containers in the host's process namespace."""
    return agent_containers(lambda kw: kw.update(pid_mode="host"))


def engine_init() -> contextlib.AbstractContextManager[None]:
    """Agent containers under the engine's init: one host file mounted into all of them."""
    return agent_containers(lambda kw: kw.update(init=True))


@contextlib.contextmanager
def one_uid() -> Iterator[None]:
    """Every sandbox runs its exec user as the config's uid (1000), as before each drew one."""
    default_sandboxes().resize(0)
    try:
        with mock.patch.object(SandboxConfig, "drawn", lambda self: self):
            yield
    finally:
        default_sandboxes().resize(0)
        default_sandboxes().resize(1)


@contextlib.contextmanager
def shared_network() -> Iterator[None]:
    """Agent containers join one long-lived container's network namespace, one after the
    other (what reusing namespaces across episodes would do)."""
    holder = client().containers.run(
        ensure_image("python"),
        ["sleep", "600"],
        network_mode="none",
        detach=True,
        auto_remove=True,
        labels=labels("redteam-weaken", "holder", "netns"),
    )
    try:
        with agent_containers(lambda kw: kw.update(network_mode=f"container:{holder.id}")):
            yield
    finally:
        holder.remove(force=True)


@contextlib.contextmanager
def hidden_tests_readable() -> Iterator[None]:
    """Grading leaves the hidden checks readable by everyone (the code under test too).

    The runner shipped to the grading container is changed so that it gives the hidden
    checks to every uid (mode 0755/0644, /grade listable) instead of the judge's group
    alone.
    """
    runner = code_grading._RUNNER["boxgym_runner.py"]
    weak = runner.replace(
        b"0o750 if path == root else 0o640", b"0o755 if path == root else 0o644"
    ).replace(b'os.chmod("/grade", 0o711)', b'os.chmod("/grade", 0o755)')
    assert weak != runner, "the runner no longer sets the hidden checks' modes this way"
    with mock.patch.dict(code_grading._RUNNER, {"boxgym_runner.py": weak}):
        yield


@contextlib.contextmanager
def runner_changed(changes: dict[str, list[tuple[bytes, bytes]]]) -> Iterator[None]:
    """The grading runner's files with some lines replaced (each must be found)."""
    weak = {}
    for name, pairs in changes.items():
        source = code_grading._RUNNER[name]
        for old, new in pairs:
            assert old in source, f"{name} no longer holds {old!r}"
            source = source.replace(old, new)
        weak[name] = source
    with mock.patch.dict(code_grading._RUNNER, weak):
        yield


def judge_asks_the_object() -> contextlib.AbstractContextManager[None]:
    """The checker asks the worker's objects for their comparisons and their truth (the trust
    grading had before truth was decided in the checker on plain values)."""
    return runner_changed(
        {
            "boxgym_checker.py": [
                (
                    b"        if _is_worker(b) and not _has_value(a) and not _has_value(b):\n"
                    b"            return self.exact(self.op(op, a, b), bool, a, op)",
                    b"        if True:\n            return self.op(op, a, b)",
                ),
                (b"        return bool(self.plain(obj))", b'        return self.op("bool", obj)'),
            ]
        }
    )


_PING_UNGUARDED = (
    b"            except BaseException as exc:  # whatever it answers",
    b"            except wire.Lost as exc:  # whatever it answers",
)
"""The judge's last liveness ping letting what the worker answers escape."""


def ping_unguarded() -> contextlib.AbstractContextManager[None]:
    """The judge lets an exception the worker answers its liveness ping with escape."""
    return runner_changed({"boxgym_checker.py": [_PING_UNGUARDED]})


def malformed_frames_escape() -> contextlib.AbstractContextManager[None]:
    """Two guards of the channel down at once: the wire lets a frame that does not parse
    escape as a ValueError (not the worker's breach), and the judge's last liveness ping
    lets it escape too (``ping_unguarded``). Either alone still ends in the code's fail."""
    return runner_changed(
        {
            "boxgym_wire.py": [
                (
                    b"        except (ValueError, MemoryError):\n"
                    b'            raise Lost("protocol", f"a malformed message',
                    b"        except MemoryError:\n"
                    b'            raise Lost("protocol", f"a malformed message',
                )
            ],
            "boxgym_checker.py": [_PING_UNGUARDED],
        }
    )


def answers_described_by_asking() -> contextlib.AbstractContextManager[None]:
    """The judge describes what the worker answered its last liveness ping with by asking
    the worker (its ``repr``), outside any guard (the checker before `_said`)."""
    return runner_changed(
        {
            "boxgym_checker.py": [
                (
                    b'f"the worker answered a ping with {_said(answer)}"',
                    b'f"the worker answered a ping with {answer!r:.80}"',
                )
            ]
        }
    )


def numbers_read_again() -> contextlib.AbstractContextManager[None]:
    """The checker asks the worker again for every number it reads off an object of the
    code (the trust it had before a number was read once between requests)."""
    return runner_changed(
        {
            "boxgym_checker.py": [
                (
                    b'_READ_ONCE = frozenset("neg pos abs invert index int float complex trunc '
                    b'floor ceil round".split())',
                    b"_READ_ONCE = frozenset()",
                )
            ]
        }
    )


def worker_homes_guessable() -> contextlib.AbstractContextManager[None]:
    """Each worker's home has a name the worker before it can predict, and no fallback."""
    return runner_changed(
        {
            "boxgym_runner.py": [
                (
                    b'home = worker_home(uid) or "/nonexistent"',
                    b"home = private_dir(f\"/tmp/boxgym-home-{self.staging['tag']}-{self.gen}\", uid)",
                )
            ]
        }
    )


def answers_unbounded() -> contextlib.AbstractContextManager[None]:
    """The judge reads answers as large as the codec allows (64 MiB), with no budget, and
    without its own memory limit (which alone turns the flood into a failed test)."""
    return runner_changed(
        {
            "boxgym_wire.py": [
                (b"MAX_ANSWER = 8 << 20", b"MAX_ANSWER = 64 << 20"),
                (b"MAX_TEST_BYTES = 64 << 20", b"MAX_TEST_BYTES = 1 << 40"),
            ],
            "boxgym_runner.py": [(b"CHECKER_MEMORY = 384 << 20", b"CHECKER_MEMORY = 1 << 40")],
        }
    )


@contextlib.contextmanager
def report_texts_raw() -> Iterator[None]:
    """The runner writes the code's texts into its report as they are, and the host reads
    the report with a strict JSON parser (a lone surrogate makes it unreadable)."""
    strict = code_grading.RunnerReport.model_validate_json
    with (
        runner_changed(
            {"boxgym_runner.py": [(b"wire.dumps(clean(report))", b"wire.dumps(report)")]}
        ),
        mock.patch.object(code_grading, "read_report", strict),
    ):
        yield


def streams_without_reconfigure() -> contextlib.AbstractContextManager[None]:
    """The worker's stand-in stdout and stderr lack ``reconfigure`` (the Capture before the
    false-fail hunt): correct code reconfiguring its output at import fails every check."""
    return runner_changed(
        {"boxgym_worker.py": [(b"    def reconfigure(\n", b"    def _reconfigure(\n")]}
    )


@contextlib.contextmanager
def floats_bit_for_bit(data: Path) -> Iterator[None]:
    """HumanEval's checks compare floats with ``==``, as before the false-fail fix: its
    tasks are written again under ``data`` (the cache of the real checks stays as it is)."""
    import environments.humaneval as humaneval

    with (
        mock.patch("gym.datasets.tolerant", lambda source: source),
        mock.patch.dict(os.environ, {"GYM_DATA": str(data)}),
    ):
        humaneval._materialised.clear()
        try:
            yield
        finally:
            humaneval._materialised.clear()


def zombies_taken_for_dead() -> contextlib.AbstractContextManager[None]:
    """The grading script skips every zombie when it clears a worker's uid, as before the
    fix: threads left behind a main thread that ended alone outlive their worker."""
    return runner_changed(
        {
            "boxgym_runner.py": [
                (
                    b'if zombie and len(os.listdir(f"/proc/{entry}/task")) < 2:',
                    b"if zombie:",
                )
            ]
        }
    )


def status_read_as_text() -> contextlib.AbstractContextManager[None]:
    """The grading script decodes /proc/PID/status as UTF-8, as before the fix: a process
    named with other bytes stops its scan, and every kill after it."""
    return runner_changed(
        {
            "boxgym_runner.py": [
                (
                    b'lines = fh.read().split(b"\\n")',
                    b'lines = fh.read().decode().encode().split(b"\\n")',
                )
            ]
        }
    )


@contextlib.contextmanager
def memory_kill_read_as_ours() -> Iterator[None]:
    """A grading killed at its container's memory limit is an error of ours, as before the
    fix: the checker's end unfinished (the runner) and no report (the host) alike."""
    from gym._core._errors import GradingError

    unfinished = (
        b"    if not finished and not timed_out and not memory_killed:\n",
        b"    if not finished and not timed_out:\n",
    )

    def no_report(spec: Any) -> Any:
        raise GradingError("the grading container ended without a report (out of memory)")

    with (
        runner_changed({"boxgym_runner.py": [unfinished]}),
        mock.patch.object(code_grading, "_memory_killed", no_report),
    ):
        yield
