"""`DockerSandbox`: a hardened container, the sandbox every real episode runs in."""

from __future__ import annotations

import contextlib
import logging
import shlex
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any, NamedTuple

from gym._core._errors import ExecTimeout, ExportTooLarge, SandboxError, SandboxUnavailable
from gym._sandbox import _oom
from gym._sandbox._base import Sandbox
from gym._sandbox._config import SandboxConfig
from gym._sandbox._engine import client, docker_errors, labels, remove_container
from gym._sandbox._gate import EngineGate, standalone
from gym._sandbox._keeper import (
    KEEPER_COMMAND,
    LISTING_BYTES,
    LISTING_ENTRIES,
    KeeperLink,
    KeeperShell,
)
from gym._sandbox._link import LINK_COMMAND, NameTaken, remove_later, start_linked
from gym._sandbox._manifest import (
    Change,
    Manifest,
    manifest_script,
    mounts_bytes,
    new_split,
    parse_manifest,
)
from gym._sandbox._shell import ExecLine, Line, Shell
from gym._sandbox._stream import Capture, ExecResult, ExecSocket, pump, result_of
from gym._sandbox._tar import pack

__all__ = ["DockerSandbox", "keeps"]

log = logging.getLogger("gym.sandbox")

_FREEZE = (
    "i=0; while [ $i -lt 50 ]; do kill -9 -1 2>/dev/null; left=; "
    'for p in /proc/[0-9]*; do [ "${p#/proc/}" != $$ ] && [ -O "$p" ] && left=1 && break; '
    'done; [ -z "$left" ] && break; i=$((i+1)); done; '
)
"""Shell text that kills every process of its own uid but itself, without forking."""

_OOM_PROBE = (
    "cat /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events 2>/dev/null"
    " | sed -n 's/^oom_kill //p' | head -n1"
)

_UID_DRAWS = 16
"""Uids drawn for one sandbox before giving up (each taken one is a container on the engine)."""


def uid_lease(uid: int) -> str:
    """The name of the container that runs as ``uid`` (`SandboxConfig.own_uid`).

    The engine refuses a second container of one name, whoever creates it: the name is
    the hold on the uid for the container's life, across every process on the engine.
    """
    return f"boxgym-uid-{uid}"


class _Start(NamedTuple):
    """How one container is started, besides its settings (`DockerSandbox.create`)."""

    lease: str | None
    """Its name, when the name holds its uid (`uid_lease`)."""
    sandbox_id: str
    tags: dict[str, str]
    urgent: bool
    gate: EngineGate

    def named(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Creation arguments with the container's name, when it holds a uid."""
        return kwargs if self.lease is None else {**kwargs, "name": self.lease}


_QUICK_S = 30.0
"""Seconds a harness script (a kill, a probe) may take."""
_KEEPER_READY_S = 30.0
"""Seconds a keeper may take to start and make itself unreachable."""
_no_keeper: set[str] = set()
"""Images whose containers could not run a keeper (no ``python3``): they get the link's
plain main process and ``docker exec`` for everything, as before the keeper."""
_no_keeper_lock = threading.Lock()


def keeps(config: SandboxConfig) -> bool:
    """Whether a sandbox of this config runs a keeper as its main process.

    Not for grading sandboxes (disposable: used once, by the harness only), nor under an
    init process of the engine's (the keeper must be pid 1: as the namespace's init it
    survives the agent's ``kill -9 -1``), nor under gVisor, nor for images without
    ``python3``.
    """
    if config.disposable or config.init or config.runtime == "runsc":
        return False
    with _no_keeper_lock:
        return config.image not in _no_keeper


class DockerSandbox(Sandbox):
    """One hardened container: exec, a persistent shell, files, diffs, close.

    Create with `DockerSandbox.create`, or take a ready one from a `SandboxPool` (through
    `DockerSandboxes`). Every method raises `SandboxUnavailable` when the container has
    vanished or died, which is distinct from a command that failed (a non-zero
    ``exit_code``).
    """

    def __init__(
        self,
        container: Any,
        config: SandboxConfig,
        sandbox_id: str,
        link: ExecSocket | None = None,
        keeper: KeeperLink | None = None,
        gate: EngineGate | None = None,
    ) -> None:
        self.container = container
        self.config = config
        self.id = sandbox_id
        self.shell = Shell(self)
        self.baseline = Manifest()
        self._link = link
        self.keeper = keeper
        """The container's keeper (its main process), when it has one."""
        self.gate = gate or standalone
        """The engine gate its execs pass through (its provider's)."""
        self._ooms = 0
        self._closed = False
        self._lock = threading.Lock()

    @classmethod
    def create(
        cls,
        config: SandboxConfig,
        *,
        run: str = "adhoc",
        episode: str = "",
        role: str = "agent",
        urgent: bool = True,
        gate: EngineGate | None = None,
    ) -> DockerSandbox:
        """Create and start a hardened container, linked to this process (see `_link`).

        Args:
            config: the sandbox settings (image, limits, mounts); the sandbox's own
                `config` is ``config.drawn()``, with an exec uid of its own that no other
                container of the engine has (its name holds it: `uid_lease`).
            run: value of the ``boxgym.run`` label.
            episode: value of the ``boxgym.episode`` label (a fresh id by default).
            role: value of the ``boxgym.role`` label (agent, grader, pool).
            urgent: an episode waits for it (else a warm-pool refill, which yields).
            gate: the engine gate of its provider (`standalone` when started outside one).
        """
        gate = gate or standalone
        sandbox_id = uuid.uuid4().hex[:16]
        tags = labels(run, episode or f"sandbox-{sandbox_id}", role)
        for _ in range(_UID_DRAWS):
            drawn = config.drawn()
            lease = None if drawn is config else uid_lease(drawn.exec_uid)
            try:
                sandbox = cls._started(drawn, _Start(lease, sandbox_id, tags, urgent, gate))
                break
            except NameTaken:  # another sandbox on this engine holds the uid: draw again
                continue
        else:
            raise SandboxUnavailable(
                f"no free uid in {_UID_DRAWS} draws: the engine holds a container named "
                "boxgym-uid-N for each (remove stale ones)"
            )
        try:
            sandbox._boot()
        except BaseException:
            sandbox.close()
            raise
        return sandbox

    @classmethod
    def _started(cls, config: SandboxConfig, start: _Start) -> DockerSandbox:
        """The container started, named ``start.lease`` (the hold on its uid), not yet booted.

        Raises:
            NameTaken: a container of that name exists on the engine.
        """
        if keeps(config):
            sandbox = cls._with_keeper(config, start)
            if sandbox is not None:
                return sandbox
        kwargs = start.named(config.create_kwargs(start.tags, command=LINK_COMMAND))
        container_id, link = start_linked(kwargs, gate=start.gate, urgent=start.urgent)
        container = client().containers.prepare_model({"Id": container_id})
        return cls(container, config, start.sandbox_id, link, gate=start.gate)

    @classmethod
    def _with_keeper(cls, config: SandboxConfig, start: _Start) -> DockerSandbox | None:
        """A sandbox whose main process is a keeper, run as the exec user.

        None if its image cannot run one; then no later sandbox of that image tries.
        """
        kwargs = start.named(config.create_kwargs(start.tags, command=KEEPER_COMMAND))
        kwargs["user"] = config.exec_user
        _oom.watch()  # its end by the memory limit is then the engine's record
        try:
            container_id, link = start_linked(
                kwargs, gate=start.gate, output=True, urgent=start.urgent
            )
        except SandboxError as exc:
            if "executable file not found" not in str(exc) and "no such file" not in str(exc):
                raise
            return cls._no_keeper(config, f"no python3 ({exc})")
        keeper = KeeperLink(link, container_id, hashed=mounts_bytes(config))
        container = client().containers.prepare_model({"Id": container_id})
        sandbox = cls(container, config, start.sandbox_id, link, keeper, start.gate)
        try:
            keeper.boot()
            keeper.ready(_KEEPER_READY_S)
        except SandboxUnavailable as exc:  # it ended before it was up: this python cannot
            sandbox.close()
            return cls._no_keeper(config, str(exc))
        except ExecTimeout as exc:
            sandbox.close()
            raise SandboxUnavailable(
                f"the keeper of container {container_id[:12]} did not start in "
                f"{_KEEPER_READY_S:.0f}s"
            ) from exc
        except BaseException:
            sandbox.close()
            raise
        return sandbox

    @staticmethod
    def _no_keeper(config: SandboxConfig, why: str) -> None:
        log.warning("image %s runs no keeper (%s): sandboxes use docker exec", config.image, why)
        with _no_keeper_lock:
            _no_keeper.add(config.image)

    def _boot(self) -> None:
        deadline = time.monotonic() + self.config.boot_timeout
        for user, command in self.config.boot:
            result = self.exec(command, user=user, timeout=max(1.0, deadline - time.monotonic()))
            if not result.ok:
                raise SandboxError(
                    f"boot step {command!r} (as {user}) failed with exit {result.exit_code}: "
                    f"{(result.stderr or result.stdout).strip()[-800:]}"
                )

    # -- lifecycle -------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether `close` was called."""
        return self._closed

    def known_gone(self) -> bool:
        """Whether the container is known to have ended, without asking the engine.

        The engine ends its shell's exec stream as the shell dies, and a link with output
        attached (a keeper's) as the container ends; a link of input only (a container
        without a keeper) stays open until this side closes it.
        """
        return self.shell.ended_by_peer() or (self._link is not None and self._link.ended_by_peer())

    def close(self) -> None:
        """Remove the container; safe to call more than once."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.shell.stop()
        remove_container(self.container.id)
        if self._link is not None:
            self._link.close()

    def let_go(self) -> None:
        """Close without waiting: end the link, and the engine removes the container."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.shell.stop()
        if self._link is not None:
            self._link.close()
        else:
            remove_later(self.container.id)

    def ensure_running(self) -> None:
        """Raise `SandboxUnavailable` unless the container is running."""
        if self._closed:
            raise SandboxUnavailable(f"sandbox {self.id} was closed")
        with docker_errors(self.container.id):
            self.container.reload()
        state = self.container.attrs.get("State", {})
        if not state.get("Running"):
            raise SandboxUnavailable(
                f"container {self.container.short_id} is {state.get('Status', 'gone')} "
                f"(exit {state.get('ExitCode')}, OOMKilled={state.get('OOMKilled')})"
            )

    def killed_at_memory_limit(self) -> bool:
        """Whether its keeper was killed at the memory limit (the engine's events)."""
        return self.keeper is not None and _oom.memory_killed(self.container.id)

    def inspect(self) -> dict[str, Any]:
        """The engine's view of the container (``docker inspect``)."""
        with docker_errors(self.container.id):
            self.container.reload()
        return dict(self.container.attrs)

    # -- exec ------------------------------------------------------------------------

    def attach(
        self, cmd: Sequence[str], *, user: str | None = None, urgent: bool = True
    ) -> tuple[str, ExecSocket]:
        """Start a command with stdin attached; return its exec id and raw socket."""
        return self._start(list(cmd), user=user, urgent=urgent)

    def open_line(self, argv: list[str], *, urgent: bool = True) -> Line:
        """Start a shell session as the exec user: the keeper's shell, or an exec of it."""
        if self._closed:
            raise SandboxUnavailable(f"sandbox {self.id} was closed")
        if self.keeper is not None:
            self.keeper.start_shell(argv, self._env(None), self.config.workdir)
            return KeeperShell(self.keeper)
        exec_id, sock = self.attach(argv, urgent=urgent)
        return ExecLine(self, exec_id, sock)

    def _kept(self, user: str | None) -> KeeperLink | None:
        """The keeper, when it can do what an exec as ``user`` would."""
        if self.keeper is not None and user in (None, self.config.exec_user):
            return self.keeper
        return None

    def _start(
        self,
        argv: list[str],
        *,
        user: str | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        urgent: bool = True,
    ) -> tuple[str, ExecSocket]:
        """Start an exec with its own input attached, always.

        Without one the engine gives an exec the host's /dev/null, one inode for every
        container: a lock on it (by way of ``/proc/<pid>/fd/0``) is seen in all of them.
        """
        if self._closed:
            raise SandboxUnavailable(f"sandbox {self.id} was closed")
        api = client().api
        slot = self.gate.urgent() if urgent else self.gate.background()
        with slot, docker_errors(self.container.id):
            exec_id = api.exec_create(
                self.container.id,
                argv,
                stdin=True,
                user=user or self.config.exec_user,
                workdir=cwd or self.config.workdir,
                environment=self._env(env),
            )["Id"]
            return exec_id, ExecSocket(api.exec_start(exec_id, socket=True))

    def _exec(
        self,
        cmd: str | Sequence[str],
        timeout: float = 60.0,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        stdin: bytes | None = None,
        user: str | None = None,
        max_output: int = 1 << 20,
    ) -> tuple[ExecResult, bytes]:
        argv = ["bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        start = time.monotonic()
        keeper = self._kept(user)
        if keeper is not None:
            if self._closed:
                raise SandboxUnavailable(f"sandbox {self.id} was closed")
            ran = keeper.run(
                argv,
                env=self._env(env),
                cwd=cwd or self.config.workdir,
                stdin=stdin or b"",
                deadline=start + timeout,
                cap=max_output,
            )
            return self._finished(ran, start)
        exec_id, sock = self._start(argv, user=user, cwd=cwd, env=env)
        try:
            out, err, timed_out = pump(sock, stdin or b"", start + timeout, max_output)
        finally:
            with contextlib.suppress(OSError):
                sock.close()
        exit_code = None
        if timed_out and self.config.disposable:
            self.close()
            return result_of(out, err, None, True, start), out.bytes()
        if timed_out:
            self.kill_processes(user)
        else:
            exit_code = self.exec_exit_code(exec_id)
        return self._finished((out, err, exit_code, timed_out), start)

    def _finished(
        self, ran: tuple[Capture, Capture, int | None, bool], start: float
    ) -> tuple[ExecResult, bytes]:
        """A command's result (and its raw output), with the memory limit's verdict."""
        out, err, exit_code, timed_out = ran
        result = result_of(out, err, exit_code, timed_out, start)
        if timed_out or exit_code == 137:
            result.oom_killed = self.oom_since_last_check()
        return result, out.bytes()

    def _env(self, extra: dict[str, str] | None) -> dict[str, str]:
        base = {
            "HOME": "/home/agent",
            "USER": "agent",  # the exec uid has no name in the image (`own_uid`)
            "LOGNAME": "agent",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "TERM": "dumb",
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "PAGER": "cat",
            "GIT_PAGER": "cat",
        }
        return {**base, **self.config.env, **(extra or {})}

    def exec_exit_code(self, exec_id: str | None) -> int | None:
        """The exit code of a finished exec (None if it is unknown or still running)."""
        if exec_id is None:
            return None
        api = client().api
        for _ in range(50):
            with docker_errors(self.container.id):
                info = api.exec_inspect(exec_id)
            if not info.get("Running"):
                code = info.get("ExitCode")
                return int(code) if code is not None else None
            time.sleep(0.01)
        return None

    def _quick(self, script: str, user: str) -> bytes:
        """Run a short harness script (``sh -c``) as ``user``; its standard output."""
        _, sock = self._start(["sh", "-c", script], user=user)
        try:
            out, _, _ = pump(sock, b"", time.monotonic() + _QUICK_S, 1 << 16)
        finally:
            with contextlib.suppress(OSError):
                sock.close()
        return out.bytes()

    def kill_processes(self, user: str | None = None) -> None:
        """Kill every process of the exec user (the whole tree, setsid'd ones included).

        The container's main process survives: it runs as a different uid, or it is the
        keeper (pid 1, which kills them itself).
        """
        keeper = self._kept(user)
        if keeper is not None:
            keeper.kill(time.monotonic() + _QUICK_S)
            return
        for _ in range(3):
            try:
                self._quick("kill -9 -1 2>/dev/null; exit 0", user or self.config.exec_user)
            except SandboxUnavailable:
                raise
            except SandboxError:
                time.sleep(0.05)  # pids limit reached by a fork bomb: try again
                continue
            if self._no_processes_left(user):
                return

    def _no_processes_left(self, user: str | None) -> bool:
        uid = (user or self.config.exec_user).split(":")[0]
        script = f'for p in /proc/[0-9]*; do [ "$(stat -c %u $p)" = {uid} ] && echo $p; done'
        return not self._quick(script, "65534:65534").strip()

    def oom_since_last_check(self) -> bool:
        """Whether the memory limit killed a process since the last call."""
        if self.keeper is not None:
            count = self.keeper.oom_kills(time.monotonic() + _QUICK_S)
            if count is not None:
                fired, self._ooms = count > self._ooms, max(count, self._ooms)
                return fired
            return bool(self.inspect().get("State", {}).get("OOMKilled"))
        raw = self._quick(_OOM_PROBE, self.config.main_user).decode(errors="replace").strip()
        count = int(raw) if raw.isdigit() else 0
        fired, self._ooms = count > self._ooms, max(count, self._ooms)
        if not raw.isdigit():
            fired = bool(self.inspect().get("State", {}).get("OOMKilled"))
        return fired

    def run(self, command: str, *, timeout: float = 60.0, max_output: int = 1 << 16) -> ExecResult:
        """Run a command in the persistent shell (fast; state persists between calls)."""
        if self._closed:
            raise SandboxUnavailable(f"sandbox {self.id} was closed")
        return self.shell.run(command, timeout=timeout, max_output=max_output)

    # -- files -----------------------------------------------------------------------

    def put_files(
        self,
        root: str,
        files: dict[str, bytes],
        *,
        mode: int = 0o644,
        timeout: float = 60.0,
        via_shell: bool = False,
        user: str | None = None,
    ) -> None:
        """Write files under ``root``; ``via_shell`` streams them through the shell (fast).

        See `Sandbox.put_files`. ``via_shell`` writes as the shell's user, and only while
        the shell is still the harness's own (seeding a fresh sandbox).
        """
        if not via_shell:
            super().put_files(root, files, mode=mode, timeout=timeout, user=user)
            return
        archive = pack(files, mode=mode)
        folder = shlex.quote(root)
        mkdir = "" if root in self.config.tmpfs else f"mkdir -p {folder} && "
        script = f"{mkdir}head -c {len(archive)} | tar -x --no-same-owner -m -C {folder}"
        result = self.shell.run_script(script, data=archive, timeout=timeout)
        self._check(result, f"write {len(files)} files under {root}")

    def diff(self) -> list[Change]:
        """Changes since the baseline: the writable mounts, plus the container layer."""
        return sorted(super().diff() + self._layer_changes(), key=lambda c: c.path)

    def snapshot(self, roots: Sequence[str] | None = None) -> Manifest:
        """See `Sandbox.snapshot`; the keeper lists and hashes in its own process."""
        if self.keeper is None:
            return super().snapshot(roots)
        if self._closed:
            raise SandboxUnavailable(f"sandbox {self.id} was closed")
        listed = list(roots or self.config.tmpfs)
        return self.keeper.listing(listed, time.monotonic() + 120)

    def final_diff(self) -> list[Change]:
        """Kill the agent's processes and read the changes, in one exec (see `Sandbox`).

        The exec runs as the exec user: ``kill -9 -1`` signals every process of that uid
        except the caller, repeated until none is left (a fork loop may race the first
        rounds), then the manifest of the writable mounts is listed.

        Raises:
            ExportTooLarge: the mounts hold more than a listing may be (`LISTING_BYTES`,
                `LISTING_ENTRIES`): what the agent left, so the episode's ``fail``.
            SandboxUnavailable: the container is gone (an infrastructure fault).
        """
        if self.keeper is not None:
            if self._closed:
                raise SandboxUnavailable(f"sandbox {self.id} was closed")
            final = self.keeper.freeze(list(self.config.tmpfs), time.monotonic() + 120)
            changes = self.baseline.diff(final) + self._layer_changes()
            return sorted(changes, key=lambda c: c.path)
        split = new_split()
        script = _FREEZE + manifest_script(
            list(self.config.tmpfs), split, mounts_bytes(self.config)
        )
        try:
            result, raw = self._exec(["sh", "-c", script], 120, max_output=LISTING_BYTES)
        except SandboxUnavailable:
            raise
        except SandboxError:  # no process left to start the exec (a fork bomb): kill first
            return super().final_diff()
        self._check(result, "freeze and snapshot")
        if result.stdout_truncated or raw.count(b"\0") > 2 * LISTING_ENTRIES + 1:
            raise ExportTooLarge(
                f"the files left in {', '.join(self.config.tmpfs)} are over the listing cap "
                f"({LISTING_BYTES} bytes, {LISTING_ENTRIES} entries); they were not listed"
            )
        changes = self.baseline.diff(parse_manifest(raw, split)) + self._layer_changes()
        return sorted(changes, key=lambda c: c.path)

    def _layer_changes(self) -> list[Change]:
        if self.config.read_only:
            return []
        with docker_errors(self.container.id):
            layer = self.container.diff() or []
        roots = tuple(self.config.tmpfs)
        return [
            Change(path=d["Path"], kind=("modified", "added", "deleted")[d["Kind"]])
            for d in layer
            if not d["Path"].startswith(roots)
        ]

    def __repr__(self) -> str:
        return f"DockerSandbox(id={self.id!r}, image={self.config.image!r})"
