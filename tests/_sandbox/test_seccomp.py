"""boxgym's seccomp profile (gym/_sandbox/_seccomp.py).

Unit tests: what the profile holds, and which containers get it. Against the real
engine: agent and grading containers run under it (32-bit system calls, ptrace and
io_uring refused), while the engine's default profile, the control, lets the same calls
through.
"""

from __future__ import annotations

import json
from unittest import mock

import pytest

from gym._grading._checks import grader_config
from gym._sandbox import DockerSandbox, SandboxConfig, _seccomp, run_once

COMPAT_GETPID = (
    "import ctypes, mmap; "
    "page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC); "
    "page.write(bytes([0xB8, 0x14, 0, 0, 0, 0xCD, 0x80, 0xC3])); "
    "at = ctypes.addressof(ctypes.c_char.from_buffer(page)); "
    "print(ctypes.CFUNCTYPE(ctypes.c_int)(at)())"
)
"""getpid through the 32-bit entry (``int 0x80``), from a 64-bit process (x86_64)."""
REFUSED = (
    "import ctypes, os, subprocess\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "child = subprocess.Popen(['sleep', '30'])\n"
    "print('ptrace', libc.ptrace(16, child.pid, None, None), ctypes.get_errno())\n"
    "child.kill()\n"
    "print('io_uring', libc.syscall(425, 1, None), ctypes.get_errno())\n"
    "print('alg', libc.socket(38, 5, 0), ctypes.get_errno())\n"
)
"""Each line: a call, its result and errno (PTRACE_ATTACH to a child of our own,
io_uring_setup, an AF_ALG socket): -1 and EPERM (1) under boxgym's profile."""

KEEPER_REACH = (
    "import os, resource\n"
    "def tried(call):\n"
    "    try:\n"
    "        call()\n"
    "        return 0\n"
    "    except OSError as exc:\n"
    "        return exc.errno\n"
    "print('others', os.getuid() == os.stat('/proc/1').st_uid, [\n"
    "    tried(lambda: resource.prlimit(1, resource.RLIMIT_NOFILE, (0, 0))),\n"
    "    tried(lambda: os.setpriority(os.PRIO_PROCESS, 1, 19)),\n"
    "    tried(lambda: os.setpriority(os.PRIO_USER, 0, 19)),\n"
    "    tried(lambda: os.sched_setscheduler(1, os.SCHED_IDLE, os.sched_param(0))),\n"
    "])\n"
    "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
    "print('own', [\n"
    "    tried(lambda: resource.prlimit(1, resource.RLIMIT_NOFILE)),\n"
    "    tried(lambda: resource.prlimit(0, resource.RLIMIT_NOFILE, (soft - 1, hard))),\n"
    "    tried(lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft - 2, hard))),\n"
    "    tried(lambda: os.setpriority(os.PRIO_PROCESS, 0, 5)),\n"
    "    tried(lambda: os.nice(1)),\n"
    "    tried(lambda: os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))),\n"
    "], resource.getrlimit(resource.RLIMIT_NOFILE)[0] == soft - 2)\n"
)
"""The keeper, pid 1 of an agent container, runs as the agent's uid (the first value
says so). Its limits and scheduling, then the caller's own: 0 where the call did it."""


class Engine:
    """Just what `apply` asks of an engine client."""

    def __init__(self, info: dict) -> None:
        self.api = mock.Mock(base_url=f"http+docker://{id(self)}")
        self._info = info

    def info(self) -> dict:
        return self._info


SECCOMP_X86 = {"SecurityOptions": ["name=seccomp,profile=default"], "Architecture": "x86_64"}


def test_the_profile_admits_only_the_native_architecture_and_denies_by_default():
    profile = json.loads(_seccomp.profile("x86_64"))
    assert profile["architectures"] == ["SCMP_ARCH_X86_64"]
    assert "archMap" not in profile
    assert profile["defaultAction"] == "SCMP_ACT_ERRNO"
    assert json.loads(_seccomp.profile("aarch64"))["architectures"] == ["SCMP_ARCH_AARCH64"]
    assert _seccomp.profile("riscv64") is None


def test_the_profile_leaves_out_the_calls_a_sandbox_has_no_use_for():
    rules = json.loads(_seccomp.profile("x86_64"))["syscalls"]
    plain = {
        n for r in rules if r["action"] == "SCMP_ACT_ALLOW" and "args" not in r for n in r["names"]
    }
    for name in (
        "ptrace",
        "process_vm_readv",
        "io_uring_setup",
        "bpf",
        "userfaultfd",
        "perf_event_open",
        "keyctl",
        "mount",
        "unshare",
        "setns",
        "clone3",
        "modify_ldt",
        "mincore",
        "clock_settime",
        "kexec_load",
        "socket",
        "clone",
    ):
        assert name not in plain, name
    for name in ("read", "execve", "wait4", "shmget", "epoll_wait", "getrandom"):
        assert name in plain, name
    conditional = {r["names"][0]: r for r in rules if "args" in r}
    assert conditional["clone"]["args"][0]["op"] == "SCMP_CMP_MASKED_EQ"
    families = sorted(r["args"][0]["value"] for r in rules if r["names"] == ["socket"])
    assert families == [1, 2, 10, 16]
    (clone3,) = (r for r in rules if r["names"] == ["clone3"])
    assert clone3["action"] == "SCMP_ACT_ERRNO" and clone3["errnoRet"] == 38


def test_apply_adds_the_profile_for_the_engines_architecture():
    args = _seccomp.apply({"security_opt": ["no-new-privileges"]}, Engine(SECCOMP_X86))
    options = args["security_opt"]
    assert options[0] == "no-new-privileges"
    assert options[1] == "seccomp=" + _seccomp.profile("x86_64")


@pytest.mark.parametrize(
    ("args", "info"),
    [
        ({"security_opt": ["seccomp=unconfined"]}, SECCOMP_X86),
        ({"security_opt": [], "runtime": "runsc"}, SECCOMP_X86),
        ({"security_opt": []}, {"SecurityOptions": [], "Architecture": "x86_64"}),
        ({"security_opt": []}, {**SECCOMP_X86, "Architecture": "riscv64"}),
    ],
    ids=["explicit-choice", "gvisor", "engine-without-seccomp", "unknown-architecture"],
)
def test_apply_leaves_containers_the_profile_is_not_for(args, info):
    assert _seccomp.apply(args, Engine(info)) is args


@pytest.mark.docker
def test_an_agent_container_runs_under_the_profile(small_config: SandboxConfig):
    with DockerSandbox.create(small_config, run="pytest") as box:
        options = box.inspect()["HostConfig"]["SecurityOpt"]
        machine = box.exec("uname -m").stdout.strip()
        refused = box.exec(["python3", "-c", REFUSED]).stdout.split("\n")
        compat = box.exec(["python3", "-c", COMPAT_GETPID])
    assert "seccomp=" + _seccomp.profile(machine) in options
    assert [line.split()[1:] for line in refused if line] == [["-1", "1"]] * 3
    if machine == "x86_64":
        assert compat.exit_code == 128 + 31 and not compat.stdout, "killed by SIGSYS"


@pytest.mark.docker
def test_the_agent_cannot_change_its_keepers_limits_nor_scheduling(small_config: SandboxConfig):
    """A process may change these for any process of its uid, and the keeper is one: a
    lowered file limit crashed it at the freeze (``infra_error`` for a failing agent).
    Only the caller's own are allowed, as ``ulimit``, ``nice`` and ``chrt`` set them."""
    with DockerSandbox.create(small_config, run="pytest") as box:
        said = box.exec(["python3", "-c", KEEPER_REACH]).stdout.splitlines()
        alive = box.exec("echo alive").stdout.strip()
    assert said == ["others True [1, 1, 1, 1]", "own [0, 0, 0, 0, 0, 0] True"]
    assert alive == "alive"


@pytest.mark.docker
def test_the_engines_default_profile_lets_those_calls_through(small_config: SandboxConfig):
    """The control: without boxgym's profile, the same probes see the calls succeed."""
    with mock.patch.object(_seccomp, "apply", lambda args, engine: args):
        with DockerSandbox.create(small_config, run="pytest") as box:
            machine = box.exec("uname -m").stdout.strip()
            refused = box.exec(["python3", "-c", REFUSED]).stdout.split("\n")
            compat = box.exec(["python3", "-c", COMPAT_GETPID])
            keeper = box.exec(["python3", "-c", KEEPER_REACH]).stdout.splitlines()[0]
    ptrace, io_uring, _ = (line.split()[1:] for line in refused if line)
    assert ptrace[0] == "0"
    assert keeper == "others True [0, 0, 0, 0]", "the keeper's limits lowered, its class idle"
    assert io_uring == ["-1", "14"], "EFAULT: the kernel read the missing parameters"
    if machine == "x86_64":
        assert compat.ok and int(compat.stdout) > 0


@pytest.mark.docker
def test_a_grading_container_runs_under_the_profile(small_config: SandboxConfig):
    config = grader_config(small_config.image)
    result = run_once(config, ["python3", "-I", "-S", "-c", COMPAT_GETPID], pooled=False)
    status = run_once(config, ["grep", "^Seccomp:", "/proc/self/status"], pooled=False)
    assert status.stdout.split() == ["Seccomp:", "2"]
    machine = run_once(config, ["uname", "-m"], pooled=False).stdout.strip()
    if machine == "x86_64":
        assert result.exit_code == 128 + 31 and not result.stdout
