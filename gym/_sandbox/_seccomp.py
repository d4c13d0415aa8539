"""boxgym's own seccomp profile: an allowlist, for the engine's native architecture only.

Every container boxgym starts gets this profile instead of the engine's default. It is
stricter in two ways:

- **One architecture.** The engine's default also admits the 32-bit system call ABIs of
  the host (x86 and x32 beside x86_64), a second kernel entry path with a history of its
  own bugs. Here a 32-bit call (``int 0x80``) kills the calling process before the
  kernel runs it.
- **A shorter list.** Only what the sandboxes' programs use (shells, coreutils, git,
  Python and pytest, PostgreSQL, a Python HTTP service): files, memory, processes and
  signals, time, waiting, local sockets and System V IPC in the container's private IPC
  namespace. Not there, so refused with ``EPERM``: ``ptrace`` and reading or writing
  another process's memory, changing another process's resource limits, priority or
  scheduling class (`_OWN`), ``io_uring`` and kernel AIO, ``bpf``, ``perf_event_open``,
  ``userfaultfd``, keyrings, namespaces and mounts, modules, clocks, NUMA policy, the
  LDT, ``mincore``, and sockets other than unix, IPv4, IPv6 and netlink.

It is also cheaper: runc compiles a container's filter at every start and every exec,
and a filter for one architecture is about a third of one for three. Measured side by
side (bench/seccomp_cost.py, docs/benchmarks.md): about 0.7x the engine default's machine
CPU per exec and per container lifecycle, close to no filter at all.

The profile goes into every container `_link.start_linked` creates, unless the
creation arguments already name a seccomp option (an explicit choice wins), the runtime
is gVisor (its own kernel serves the calls), or the engine has no seccomp or runs on an
architecture this module does not know; those containers get the engine's default.
"""

from __future__ import annotations

import json
import threading
from functools import cache
from typing import Any

__all__ = ["ARCHITECTURES", "apply", "profile"]

ARCHITECTURES = {"x86_64": "SCMP_ARCH_X86_64", "aarch64": "SCMP_ARCH_AARCH64"}
"""The engine host's ``uname -m`` -> libseccomp's name for its native ABI."""

_ALLOWED = {
    "files": """
        read write readv writev pread64 pwrite64 preadv preadv2 pwritev pwritev2 open
        openat openat2 creat close close_range lseek stat fstat lstat newfstatat statx
        statfs fstatfs access faccessat faccessat2 readlink readlinkat getdents
        getdents64 getcwd chdir fchdir mkdir mkdirat rmdir rename renameat renameat2 link
        linkat symlink symlinkat unlink unlinkat chmod fchmod fchmodat chown fchown lchown
        fchownat umask truncate ftruncate fallocate fadvise64 readahead fsync fdatasync
        sync syncfs sync_file_range utime utimes utimensat futimesat mknod mknodat dup dup2
        dup3 fcntl flock ioctl pipe pipe2 sendfile splice tee vmsplice copy_file_range
        getxattr lgetxattr fgetxattr listxattr llistxattr flistxattr setxattr lsetxattr
        fsetxattr removexattr lremovexattr fremovexattr inotify_init inotify_init1
        inotify_add_watch inotify_rm_watch memfd_create
    """,
    "memory": """
        brk mmap munmap mprotect mremap madvise msync mlock mlock2 munlock mlockall
        munlockall membarrier
    """,
    "processes": """
        fork vfork execve execveat exit exit_group wait4 waitid kill tgkill tkill getpid
        getppid gettid getpgid setpgid getpgrp getsid setsid getuid geteuid getgid getegid
        getresuid getresgid getgroups setuid setgid setreuid setregid setresuid setresgid
        setgroups setfsuid setfsgid capget capset prctl arch_prctl set_tid_address
        set_robust_list get_robust_list rseq getrlimit setrlimit getrusage getpriority
        ioprio_get sched_yield sched_getaffinity sched_setaffinity sched_getparam
        sched_getscheduler sched_get_priority_max sched_get_priority_min
        sched_rr_get_interval sched_getattr uname sysinfo getcpu getrandom
        times pidfd_open pidfd_send_signal seccomp landlock_create_ruleset
        landlock_add_rule landlock_restrict_self
    """,
    "signals": """
        rt_sigaction rt_sigprocmask rt_sigreturn rt_sigpending rt_sigsuspend
        rt_sigtimedwait rt_sigqueueinfo rt_tgsigqueueinfo sigaltstack signalfd signalfd4
        pause alarm setitimer getitimer
    """,
    "time": """
        clock_gettime clock_getres clock_nanosleep nanosleep gettimeofday time
        timer_create timer_delete timer_settime timer_gettime timer_getoverrun
        timerfd_create timerfd_settime timerfd_gettime
    """,
    "waiting": """
        poll ppoll select pselect6 epoll_create epoll_create1 epoll_ctl epoll_wait
        epoll_pwait epoll_pwait2 eventfd eventfd2 futex futex_waitv restart_syscall
    """,
    "sockets": """
        socketpair bind listen accept accept4 connect getsockname getpeername getsockopt
        setsockopt shutdown sendto recvfrom sendmsg recvmsg sendmmsg recvmmsg
    """,
    "ipc": """
        shmget shmat shmdt shmctl semget semop semtimedop semctl msgget msgsnd msgrcv
        msgctl
    """,
}
"""System calls allowed without condition, by what they are for."""

_SOCKET_FAMILIES = (1, 2, 10, 16)
"""AF_UNIX, AF_INET, AF_INET6, AF_NETLINK: the only families ``socket`` may open."""
_NAMESPACE_FLAGS = 0x7E020000
"""CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET: a ``clone``
with any of these is refused (a new process or thread is not)."""
_PERSONALITIES = (0, 0xFFFFFFFF)
"""PER_LINUX and the query: no other execution domain (no ADDR_NO_RANDOMIZE)."""
_ENOSYS = 38
_OWN = {
    "prlimit64": ((0, 0),),
    "setpriority": ((0, 0), (1, 0)),
    "ioprio_set": ((0, 1), (1, 0)),
    "sched_setscheduler": ((0, 0),),
    "sched_setparam": ((0, 0),),
    "sched_setattr": ((0, 0),),
}
"""Calls that change a process's limits or its share of the CPU or the disk, allowed only
on the caller itself (the argument at each index equal to its value: pid 0; for
``setpriority`` and ``ioprio_set`` also "one process", not a group nor a user). The
kernel lets a process change these for any process of its uid, and the keeper, the
agent container's pid 1, runs as the agent's uid: a lowered file or process limit
crashed it at the freeze and an idle scheduling class starved it, each an
``infra_error`` where the agent had failed (found by a red-team helper). ``setrlimit``,
``nice``, ``ionice`` and ``chrt`` of a command, and glibc's ``getrlimit`` (``prlimit64``
with no new limit, allowed for any pid) pass as before; ``sched_setaffinity`` stays
(the CPUs it picks from are the container's, and the fair share it leaves is the same)."""


def _when(name: str, index: int, value: int, op: str = "SCMP_CMP_EQ") -> dict[str, Any]:
    return _all_of(name, ((index, value),), op)


def _all_of(
    name: str, pairs: tuple[tuple[int, int], ...], op: str = "SCMP_CMP_EQ"
) -> dict[str, Any]:
    """A rule allowing ``name`` when each argument at an index equals its value."""
    return {
        "names": [name],
        "action": "SCMP_ACT_ALLOW",
        "args": [{"index": i, "value": v, "valueTwo": 0, "op": op} for i, v in pairs],
    }


@cache
def profile(machine: str) -> str | None:
    """The profile (Docker's seccomp JSON) for an engine host's ``uname -m``, or None.

    None for an architecture not in `ARCHITECTURES`: such an engine keeps its default.
    """
    arch = ARCHITECTURES.get(machine)
    if arch is None:
        return None
    names = sorted({name for group in _ALLOWED.values() for name in group.split()})
    rules: list[dict[str, Any]] = [{"names": names, "action": "SCMP_ACT_ALLOW"}]
    rules += [_when("socket", 0, family) for family in _SOCKET_FAMILIES]
    rules += [_when("personality", 0, persona) for persona in _PERSONALITIES]
    rules.append(_when("clone", 0, _NAMESPACE_FLAGS, "SCMP_CMP_MASKED_EQ"))
    rules += [_all_of(name, pairs) for name, pairs in _OWN.items()]
    rules.append(_when("prlimit64", 2, 0))  # a read of any process's limits, no new ones
    # glibc tries clone3 first and falls back to clone on ENOSYS; clone3's flags live in
    # memory, out of a filter's reach, so it is answered "not implemented" instead.
    rules.append({"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": _ENOSYS})
    body = {"defaultAction": "SCMP_ACT_ERRNO", "architectures": [arch], "syscalls": rules}
    return json.dumps(body, separators=(",", ":"))


_lock = threading.Lock()
_machines: dict[str, str | None] = {}  # engine address -> its host's uname -m, or None


def _machine(engine: Any) -> str | None:
    """The engine host's ``uname -m`` if the engine filters system calls, else None."""
    with _lock:
        key = str(engine.api.base_url)
        if key not in _machines:
            info = engine.info()
            seccomp = any(o.startswith("name=seccomp") for o in info.get("SecurityOptions", []))
            _machines[key] = info.get("Architecture") if seccomp else None
        return _machines[key]


def apply(args: dict[str, Any], engine: Any) -> dict[str, Any]:
    """``args`` (container creation arguments) with boxgym's profile in ``security_opt``.

    Unchanged when they name a seccomp option already, run under gVisor, or the engine
    has no profile of boxgym's (see the module docstring).
    """
    options = list(args.get("security_opt") or [])
    if args.get("runtime") == "runsc" or any(o.startswith("seccomp") for o in options):
        return args
    machine = _machine(engine)
    text = profile(machine) if machine else None
    if text is None:
        return args
    return {**args, "security_opt": [*options, f"seccomp={text}"]}
