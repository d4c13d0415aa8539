"""Network-less containers without the engine's network sandbox (gym/_sandbox/_netless.py).

Against the real engine: each container still has a network namespace of its own that
nothing else shares or had before it, with only ``lo``; ``localhost`` resolves; the hosts
file cannot be changed from inside, even by root. Unit tests: which containers it applies
to, and the fallback when the engine cannot mount the hosts file.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from gym._grading._checks import grader_config
from gym._sandbox import DockerSandbox, SandboxConfig, _netless, run_once
from gym._sandbox._netless import HOSTS, netless

BINDS = "grep -E ' - (ext[234]|xfs|btrfs) ' /proc/self/mountinfo | cut -d' ' -f5 | sort"
"""Where the host's files are mounted in this container."""
LO_COUNTERS = "grep 'lo:' /proc/net/dev | tr -s ' ' | cut -d' ' -f3,4,11,12"
SEND = (
    'python3 -c "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); '
    "[s.sendto(b'x' * 1000, ('127.0.0.1', 9)) for _ in range(40)]\""
)


@pytest.mark.docker
def test_a_sandbox_has_no_network_sandbox_of_the_engine_but_its_own_namespace(sandbox):
    info = sandbox.inspect()
    assert info["Config"]["NetworkDisabled"] is True
    assert info["HostConfig"]["NetworkMode"] == "none"
    assert info["NetworkSettings"]["SandboxKey"] in ("", None)
    hosts = [m for m in info["Mounts"] if m["Destination"] == "/etc/hosts"]
    assert len(hosts) == 1 and hosts[0]["RW"] is False
    assert not Path(hosts[0]["Source"]).exists(), "its own file, unlinked once it started"
    mine = sandbox.exec("readlink /proc/self/ns/net; ls /sys/class/net").stdout.split()
    with DockerSandbox.create(SandboxConfig(image=info["Config"]["Image"]), run="pytest") as other:
        theirs = other.exec("readlink /proc/self/ns/net").stdout.strip()
    assert mine[1:] == ["lo"]
    assert mine[0] != theirs


@pytest.mark.docker
def test_localhost_resolves_and_loopback_works(sandbox):
    probe = (
        "import socket; s = socket.socket(); s.bind(('localhost', 0)); s.listen(); "
        "c = socket.create_connection(('localhost', s.getsockname()[1])); "
        "print(socket.getaddrinfo('localhost', 80)[0][4][0], 'connected')"
    )
    result = sandbox.exec(["python3", "-c", probe])
    assert result.ok, result.stderr
    assert result.stdout.split()[1] == "connected"
    assert result.stdout.split()[0] in ("127.0.0.1", "::1")


@pytest.mark.docker
def test_root_in_a_grading_container_cannot_change_the_hosts_file(python_image):
    script = (
        "id -u; { echo 6.6.6.6 evil >> /etc/hosts; } 2>&1; mount -o remount,rw /etc/hosts 2>&1; "
        "cat /etc/hosts"
    )
    result = run_once(grader_config(python_image), ["sh", "-c", script], pooled=False)
    assert result.stdout.startswith("0\n")
    assert "Read-only file system" in result.stdout
    assert result.stdout.endswith(HOSTS)


@pytest.mark.docker
@pytest.mark.parametrize("path", ["/etc/hosts", "/proc/self/fd/0"])
def test_two_containers_share_no_file_to_lock(python_image, path):
    """A lock is held on an inode: one hosts file for all, or the host's /dev/null as every
    exec's input, would let any two containers running at once signal through ``flock``
    (a grading worker to another episode's agent, or two agents of one GRPO group)."""
    lock = f"import fcntl; f = open('{path}'); fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)"
    hold = f"{lock}; import os, time; open('/tmp/held', 'w').write(str(os.getpid())); time.sleep(8)"
    # the holder's own file, as another process of its container sees it
    again = lock.replace("'/proc/self", "'/proc/' + open('/tmp/held').read() + '")
    config = SandboxConfig(image=python_image)
    with DockerSandbox.create(config, run="pytest") as a:
        with DockerSandbox.create(config, run="pytest") as b:
            holder = threading.Thread(target=a.exec, args=(["python3", "-c", hold],))
            holder.start()
            deadline = time.monotonic() + 20
            while not a.exec("test -e /tmp/held").ok and time.monotonic() < deadline:
                time.sleep(0.1)
            in_a, in_b = a.exec(["python3", "-c", again]), b.exec(["python3", "-c", lock])
            holder.join()
    assert not in_a.ok, "the holder held its lock"
    assert in_b.ok, in_b.stderr  # b's own file: a's lock is not on it


@pytest.mark.docker
def test_a_grading_container_holds_no_host_file_another_container_has(python_image):
    """The code under test runs beside other episodes' agents: no inode may be shared with
    them. Docker's init is one host file bind-mounted into every container that has one;
    the hosts file and the hostname file are the container's own."""
    result = run_once(grader_config(python_image), ["sh", "-c", BINDS], pooled=False)
    assert result.ok, result.stderr
    assert result.stdout.split() == ["/etc/hostname", "/etc/hosts"]


@pytest.mark.docker
def test_an_agent_container_holds_no_host_file_another_container_has(sandbox):
    """Two agents running at once (one GRPO group's samples) must share no inode either."""
    result = sandbox.exec(["sh", "-c", BINDS])
    assert result.ok, result.stderr
    assert result.stdout.split() == ["/etc/hostname", "/etc/hosts"]


@pytest.mark.docker
def test_nothing_of_a_namespace_reaches_the_next_container(python_image):
    """Packet counters of lo are a channel no process can reset: a shared or reused
    namespace would carry one episode's message to the next (the reason boxgym never
    reuses one). Each container must start from zero."""
    config = SandboxConfig(image=python_image)
    first = run_once(config, ["sh", "-c", f"{SEND}; {LO_COUNTERS}"], pooled=False)
    assert first.ok, first.stderr
    assert first.stdout.split() != ["0", "0", "0", "0"]  # the counters did move
    for _ in range(3):
        after = run_once(config, ["sh", "-c", LO_COUNTERS], pooled=False)
        assert after.stdout.split() == ["0", "0", "0", "0"]


def test_containers_with_a_network_or_under_gvisor_are_left_alone():
    named = {"image": "x", "network_mode": "boxgym-internal"}
    gvisor = {"image": "x", "network_mode": "none", "runtime": "runsc"}
    assert netless(named) is named
    assert netless(gvisor) is gvisor


@pytest.mark.docker
def test_an_engine_that_cannot_mount_the_hosts_file_gets_the_old_way(
    monkeypatch, tmp_path, python_image
):
    """The engine sees no file at the source (as a remote engine would): the container is
    created the old way, and so is every later one."""
    monkeypatch.setenv("GYM_DATA", str(tmp_path))
    monkeypatch.setattr(_netless, "_new_hosts", lambda folder, sweep: folder / "not-there")
    config = SandboxConfig(image=python_image)
    for _ in range(2):
        with DockerSandbox.create(config, run="pytest") as box:
            info = box.inspect()
            assert not info["Config"].get("NetworkDisabled")
            assert box.exec("getent hosts localhost").ok  # the engine's own hosts file
    assert netless({"image": "x", "network_mode": "none"}) == {"image": "x", "network_mode": "none"}


def test_a_network_less_container_gets_the_hosts_mount_until_the_engine_refuses_it(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("GYM_DATA", str(tmp_path))
    args = {"image": "img", "network_mode": "none", "mounts": []}
    fast = netless(args)
    assert fast["network_disabled"] is True
    (mount,) = fast["mounts"]
    assert mount["Target"] == "/etc/hosts" and mount["ReadOnly"] is True
    source = Path(mount["Source"])
    assert source.parent == tmp_path / "hosts" and source.read_text() == HOSTS
    _netless.release(fast)
    assert not source.exists()
    _netless.created(fast)
    assert netless(args)["network_disabled"] is True
    _netless.refused()
    assert netless(args) is args


def test_every_container_gets_a_hosts_file_of_its_own_and_leftovers_are_swept(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("GYM_DATA", str(tmp_path))
    monkeypatch.setattr(_netless, "_swept", set())
    (tmp_path / "hosts").mkdir()
    old, recent = tmp_path / "hosts" / "old", tmp_path / "hosts" / "recent"
    old.write_text(HOSTS)
    recent.write_text(HOSTS)
    os.utime(old, (time.time() - _netless.ORPHAN_S - 60,) * 2)
    args = {"image": "img", "network_mode": "none"}
    first, second = netless(args), netless(args)
    assert first["mounts"][0]["Source"] != second["mounts"][0]["Source"]
    assert not old.exists() and recent.exists()  # a creator may start it any moment
