"""Network-less containers without the engine's network sandbox (gym/_sandbox/_netless.py).

Against the real engine: each container still has a network namespace of its own that
nothing else shares or had before it, with only ``lo``; ``localhost`` resolves; the hosts
file cannot be changed from inside, even by root. Unit tests: which containers it applies
to, and the fallback when the engine cannot mount the hosts file.
"""

from __future__ import annotations

import pytest

from gym._grading._checks import grader_config
from gym._paths import data_dir
from gym._sandbox import DockerSandbox, SandboxConfig, _netless, run_once
from gym._sandbox._netless import HOSTS, netless

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
    assert (data_dir() / "etc-hosts").read_text() == HOSTS


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
    monkeypatch.setattr(_netless, "_write_hosts", lambda folder, check: folder / "not-there")
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
    assert mount["Source"] == str(tmp_path / "etc-hosts")
    assert (tmp_path / "etc-hosts").read_text() == HOSTS
    _netless.created(fast)
    assert netless(args)["network_disabled"] is True
    _netless.refused()
    assert netless(args) is args


def test_a_removed_hosts_file_is_written_again(monkeypatch, tmp_path):
    monkeypatch.setenv("GYM_DATA", str(tmp_path))
    _netless.created(netless({"image": "img", "network_mode": "none"}))
    (tmp_path / "etc-hosts").unlink()
    netless({"image": "img", "network_mode": "none"})
    assert (tmp_path / "etc-hosts").read_text() == HOSTS
