"""Sandbox settings: hardened by default, validated so that nothing weakens isolation."""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gym._core._errors import UnsafeConfig

__all__ = ["SandboxConfig"]

_SAFE_CAPS = {"SETUID", "SETGID"}
_SENTRY_THREADS = 192
"""Under gVisor the container's pids cgroup also counts the sandbox kernel's own threads
(a support container with a limit of 64 dies at its first exec): they get this headroom."""
_HOST_PIDS_PER_TASK = 4
"""Under gVisor (ptrace platform) each process inside costs several host pids: a process
limit inside (RLIMIT_NPROC, which gVisor enforces per sandbox) of a quarter of the pids
limit stops a fork bomb before the sandbox kernel itself runs out and dies."""
_IPC_SYSCTLS = {
    "kernel.shmmax": "67108864",
    "kernel.shmall": "16384",
    "kernel.shmmni": "64",
    "kernel.msgmni": "16",
    "kernel.msgmnb": "65536",
    "kernel.sem": "250 4000 32 16",
    "fs.mqueue.queues_max": "16",
}
"""Bounds on what the kernel holds for a container's processes in its own IPC namespace.

System V shared memory, message queues and semaphores outlive the processes that made
them and no process limit counts them, but their pages count against the container's
memory: unbounded (a private namespace allows exabytes), code under test filled the
grading container until the kernel killed the checker (`infra_error`). Shared memory
gets what /dev/shm gets (64 MiB in all), queues and semaphores about 1 MiB each."""
_TMPFS_OPT = re.compile(r"^[a-z0-9_]+(=[A-Za-z0-9_.]+)?(,[a-z0-9_]+(=[A-Za-z0-9_.]+)?)*$")
_TMPFS_SIZE = re.compile(r"(?:^|,)size=([0-9]+)([kmgtpe]?)(?:,|$)", re.IGNORECASE)
_BYTES_PER_INODE = 16 << 10
"""A tmpfs's size per inode it may hold, where its options set no ``nr_inodes``."""
_MIN_INODES = 1024
_SHM = "/dev/shm"
_SHM_TMPFS = "size=64m,nr_inodes=4096,mode=1777"
"""/dev/shm as the engine makes it for a private IPC namespace (64 MiB), inodes bounded."""
_OWN_UIDS = (1 << 20, 1 << 24)
"""The host uids sandboxes get (`SandboxConfig.own_uid`): above every account and image
user, below the grading runner's (2**24 up)."""


class SandboxConfig(BaseModel):
    """How a sandbox container is created. Defaults are the hardened ones.

    The container's main process (given to `create_kwargs`) runs as ``main_user``;
    every exec runs as ``exec_user``, a different uid, so that a timeout can kill all of
    the exec user's processes (``kill -9 -1``) without killing the container.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    image: str
    """Image reference (tag or ``sha256:`` id) the container starts from."""
    main_user: str = "65534:65534"
    """uid:gid of the container's main process (``nobody``)."""
    exec_user: str = "1000:1000"
    """uid:gid every exec runs as (the agent); must differ from ``main_user``."""
    workdir: str = "/workspace"
    """Working directory of execs and root of the agent's workspace."""
    memory_mb: int = Field(1024, ge=16)
    """Memory limit in MiB; swap is set equal so the container cannot swap."""
    pids_limit: int = Field(256, ge=8)
    """Maximum number of processes and threads in the container (under gVisor, plus
    headroom for the sandbox kernel's own threads)."""
    cpus: float = Field(1.0, gt=0)
    """CPU quota in cores."""
    read_only: bool = True
    """Read-only root filesystem; writes go to the size-capped tmpfs mounts."""
    tmpfs: dict[str, str] = Field(
        default_factory=lambda: {
            "/workspace": "size=256m,uid=1000,gid=1000,mode=0755",
            "/tmp": "size=256m,mode=1777",
            "/home/agent": "size=64m,uid=1000,gid=1000,mode=0755",
        }
    )
    """Size-capped scratch mounts (path -> mount options); the only writable places."""
    network: str = "none"
    """Network mode; only ``none`` or a named internal network are accepted."""
    cap_add: tuple[str, ...] = ()
    """Capabilities to add back after dropping all; only SETUID and SETGID are allowed."""
    runtime: str | None = Field(default_factory=lambda: os.environ.get("GYM_RUNTIME") or None)
    """OCI runtime (for example ``runsc`` for gVisor); None uses the engine default.
    ``$GYM_RUNTIME`` sets it for every sandbox of a process (``gym run --runtime``)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables of the container (an allowlist: nothing is inherited)."""
    boot: tuple[tuple[str, str], ...] = ()
    """Steps run once right after the container starts, before it is handed out (or
    enters a warm pool): ``(user, shell command)`` pairs, for example starting a
    database server as its own user. A failing step fails the sandbox's creation."""
    boot_timeout: float = 60.0
    """Seconds all boot steps may take together."""
    own_uid: bool = True
    """Each sandbox runs its exec user as a host uid of its own, drawn as the sandbox is
    created (`drawn`) and held by its container's name: ``exec_user``'s uid, in the
    tmpfs mounts' ``uid=``/``gid=`` and in boot steps as well. The kernel counts some
    things per uid for the whole machine (processes, inotify instances and watches, epoll
    watches, pipe pages, pending signals, locked memory); with one uid for every sandbox,
    one agent holding them made another's programs fail and could count its processes.
    The uid has no name in the image (``whoami`` fails; ``HOME``, ``USER`` and
    ``LOGNAME`` are set). Off where a program of the image must find the exec user by
    name, such as PostgreSQL's peer authentication."""
    disposable: bool = False
    """Used once, by the harness only (grading): a timed-out exec removes the container
    instead of killing the exec user's processes, so main and exec user may be equal."""
    init: bool = False
    """Run the main process under the engine's init (``docker-init``, which reaps
    orphans). Off: that init is one host file bind-mounted into every container that has
    it, an inode any of them can ``flock`` to signal another running at the same time.
    boxgym's main processes reap their own children (the agent container's shell, the
    grading runner); turn it on only for a main process of your own that does not."""

    @field_validator("network")
    @classmethod
    def _network(cls, value: str) -> str:
        if value in {"host", "bridge", "default"} or value.startswith("container:"):
            raise UnsafeConfig(
                f"network {value!r} would give the sandbox a route out; use 'none' or a "
                "named internal network"
            )
        return value

    @field_validator("runtime")
    @classmethod
    def _runtime(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[a-z][a-z0-9.-]{0,31}", value):
            raise UnsafeConfig(f"runtime {value!r} is not a runtime name (runc, runsc...)")
        return value

    @field_validator("cap_add")
    @classmethod
    def _caps(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        extra = {c.upper().removeprefix("CAP_") for c in value} - _SAFE_CAPS
        if extra:
            raise UnsafeConfig(f"capabilities {sorted(extra)} are not allowed in a sandbox")
        return tuple(sorted(c.upper().removeprefix("CAP_") for c in value))

    @field_validator("tmpfs")
    @classmethod
    def _tmpfs(cls, value: dict[str, str]) -> dict[str, str]:
        for path, opts in value.items():
            if not path.startswith("/") or "size=" not in opts or not _TMPFS_OPT.match(opts):
                raise UnsafeConfig(
                    f"tmpfs {path!r}: {opts!r} needs an absolute path and a size= option"
                )
        return value

    @model_validator(mode="after")
    def _users(self) -> SandboxConfig:
        if self.main_user.split(":")[0] == self.exec_user.split(":")[0] and not self.disposable:
            raise UnsafeConfig(
                "exec_user must differ from main_user, or a timeout would kill the container"
            )
        return self

    @property
    def key(self) -> str:
        """A short content hash of the settings, used to key warm pools."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    @property
    def exec_uid(self) -> int:
        """The numeric uid of ``exec_user``."""
        return int(self.exec_user.split(":")[0])

    def drawn(self) -> SandboxConfig:
        """The settings one new sandbox is made with: an exec uid drawn at random (`own_uid`).

        At random, not in turn: a sequence would be shared by processes forked from one
        (gymnasium's vector envs), and would tell an agent how many sandboxes started
        between two of its own. No two containers of an engine run as one drawn uid: the
        container's name holds it (`gym._sandbox._docker.uid_lease`). Itself where
        ``own_uid`` is off or the exec user is root.
        """
        if not self.own_uid or self.exec_uid == 0:
            return self
        low, high = _OWN_UIDS
        return self.with_uid(low + secrets.randbelow(high - low))

    def with_uid(self, uid: int) -> SandboxConfig:
        """These settings with ``uid`` for the exec user's uid and gid, wherever they appear."""
        old_uid, _, old_gid = self.exec_user.partition(":")
        user = f"{uid}:{uid}"

        def mount(opts: str) -> str:
            names = {f"uid={old_uid}": f"uid={uid}", f"gid={old_gid or old_uid}": f"gid={uid}"}
            return ",".join(names.get(part, part) for part in opts.split(","))

        return self.model_copy(
            update={
                "exec_user": user,
                "own_uid": False,
                "tmpfs": {path: mount(opts) for path, opts in self.tmpfs.items()},
                "boot": tuple((user if who == self.exec_user else who, c) for who, c in self.boot),
            }
        )

    def mounts(self) -> dict[str, str]:
        """The container's tmpfs mounts: ``tmpfs``, each with a bound on its inodes.

        A tmpfs's size caps the bytes of its files, not what the kernel keeps for it:
        an inode and a name per file, folder or link, and extended attributes, whose
        space is charged to the inodes' budget (``nr_inodes``, 1 KiB of attributes per
        inode). That memory is the container's and outlives the processes that made it;
        unbounded (the default is half the host's pages), code under test filled its
        grading container with empty files and 64 KiB attributes until the kernel killed
        the checker (`infra_error`). Every mount gets one inode per 16 KiB of its size
        (at least 1,024) unless its options set ``nr_inodes``, and /dev/shm, which the
        engine would make unbounded, is mounted the same way (64 MiB, 4,096 inodes).
        Under gVisor the mounts are its own kernel's and are left as given.
        """
        if self.runtime == "runsc":
            return dict(self.tmpfs)
        mounts = {path: _inodes_bounded(opts) for path, opts in self.tmpfs.items()}
        mounts.setdefault(_SHM, _SHM_TMPFS)
        return mounts

    def create_kwargs(self, labels: dict[str, str], command: list[str]) -> dict[str, Any]:
        """Keyword arguments for ``docker.containers.create`` with every hardening set.

        Args:
            labels: the container's labels.
            command: the main process (it must reap its children unless ``init`` is on).
        """
        kwargs: dict[str, Any] = {
            "image": self.image,
            "command": command,
            "user": self.main_user,
            "working_dir": self.workdir,
            "init": self.init,
            "network_mode": self.network,
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "pids_limit": self.pids_limit + (_SENTRY_THREADS if self.runtime == "runsc" else 0),
            "mem_limit": f"{self.memory_mb}m",
            "memswap_limit": f"{self.memory_mb}m",
            "nano_cpus": int(self.cpus * 1e9),
            "read_only": self.read_only,
            "tmpfs": self.mounts(),
            "environment": dict(self.env),
            "labels": labels,
            "stop_signal": "SIGKILL",
            "detach": True,
            "ipc_mode": "private",
            "cgroupns": "private",
            "privileged": False,
        }
        if self.cap_add:
            kwargs["cap_add"] = list(self.cap_add)
        if self.runtime:
            kwargs["runtime"] = self.runtime
        if self.runtime == "runsc":
            tasks = max(8, self.pids_limit // _HOST_PIDS_PER_TASK)
            kwargs["ulimits"] = [{"name": "nproc", "soft": tasks, "hard": tasks}]
        else:  # gVisor keeps IPC in its own kernel; these sysctls are runc's namespace's
            kwargs["sysctls"] = dict(_IPC_SYSCTLS)
        return kwargs


def _inodes_bounded(opts: str) -> str:
    """Mount options with ``nr_inodes`` set from the size (see `SandboxConfig.mounts`)."""
    found = _TMPFS_SIZE.search(opts)
    if "nr_inodes=" in opts or found is None:
        return opts
    number, unit = found.groups()
    size = int(number) << (10 * (" kmgtpe".index(unit.lower() or " ")))
    return f"{opts},nr_inodes={max(_MIN_INODES, size // _BYTES_PER_INODE)}"
