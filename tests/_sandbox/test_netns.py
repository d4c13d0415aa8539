"""Network namespaces reused one container at a time (gym/_sandbox/_netns.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from gym._sandbox import DockerSandbox, SandboxConfig, client
from gym._sandbox._link import holders
from gym._sandbox._netns import Holder, NetnsHolders

LISTEN = """
import os, socket, time
tcp = socket.socket(); tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
tcp.bind(("127.0.0.1", 7077)); tcp.listen()
unix = socket.socket(socket.AF_UNIX); unix.bind("\\0boxgym-left-behind"); unix.listen()
open("/tmp/ready", "w").close()
time.sleep(600)
"""
REACH = """
import socket
for family, address in ((socket.AF_INET, ("127.0.0.1", 7077)),
                        (socket.AF_UNIX, "\\0boxgym-left-behind")):
    s = socket.socket(family)
    try:
        s.connect(address)
        print("reached", family.name)
    except OSError:
        print("refused", family.name)
"""


@pytest.fixture(autouse=True)
def reuse_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOXGYM_REUSE_NETNS", "1")  # opt-in


def network(box: DockerSandbox) -> str:
    return str(client().api.inspect_container(box.container.id)["HostConfig"]["NetworkMode"])


def returned(holder_mode: str, timeout: float = 20.0) -> None:
    """Wait until the holder behind ``holder_mode`` is idle again (its lessee destroyed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(h.mode == holder_mode for h in holders._idle):
            return
        time.sleep(0.05)
    raise AssertionError(f"{holder_mode} never came back: {holders.counts()}")


def reach(box: DockerSandbox) -> str:
    return box.run(f"python3 -I -c '{REACH}'", timeout=30).stdout


@pytest.fixture
def boxes(small_config: SandboxConfig) -> Iterator[Any]:
    made: list[DockerSandbox] = []

    def make(config: SandboxConfig = small_config) -> DockerSandbox:
        box = DockerSandbox.create(config, run="pytest")
        made.append(box)
        return box

    yield make
    for box in made:
        box.close()


@pytest.mark.docker
def test_a_sandbox_joins_a_holder_no_live_sandbox_shares_and_a_destroyed_ones_is_reused(boxes):
    first, second = boxes(), boxes()
    assert network(first).startswith("container:")
    assert network(second).startswith("container:") and network(second) != network(first)
    mode = network(first)
    first.close()
    returned(mode)
    third = boxes()
    assert network(third) == mode != network(second)


@pytest.mark.docker
def test_nothing_a_sandbox_left_listening_reaches_a_neighbour_or_the_next_lessee(boxes):
    first, neighbour = boxes(), boxes()
    first.run(f"setsid python3 -I -c '{LISTEN}' >/dev/null 2>&1 &", timeout=30)
    assert first.run("for i in $(seq 100); do [ -e /tmp/ready ] && break; sleep 0.1; done").ok
    assert reach(first).split() == ["reached", "AF_INET", "reached", "AF_UNIX"]  # the control
    assert reach(neighbour).split() == ["refused", "AF_INET", "refused", "AF_UNIX"]
    mode = network(first)
    first.close()
    returned(mode)
    following = boxes()
    assert network(following) == mode
    assert reach(following).split() == ["refused", "AF_INET", "refused", "AF_UNIX"]


CLOSE_FIRST = """
import socket
server = socket.socket(); server.bind(("127.0.0.1", 7078)); server.listen()
client = socket.create_connection(("127.0.0.1", 7078))
conn, _ = server.accept()
conn.close()  # the server side closes first: its port is left in TIME_WAIT
client.close(); server.close()
"""
BIND = """
import socket
s = socket.socket()
s.bind(("127.0.0.1", 7078))
print("bound")
"""


@pytest.mark.docker
def test_a_namespace_with_a_port_in_time_wait_is_not_leased_until_it_is_free(boxes):
    first = boxes()
    assert first.run(f"python3 -I -c '{CLOSE_FIRST}'", timeout=30).ok
    control = first.run(f"python3 -I -c '{BIND}'", timeout=30)
    assert "Address already in use" in control.stderr  # without SO_REUSEADDR
    mode = network(first)
    first.close()
    returned(mode)
    holder = next(h for h in holders._idle if h.mode == mode)
    assert (holder.sockets() or 0) >= 1
    following = boxes()
    assert network(following) != mode
    assert following.run(f"python3 -I -c '{BIND}'", timeout=30).stdout.strip() == "bound"


@pytest.mark.docker
def test_a_lessee_has_only_loopback_and_cannot_write_the_holders_name_files(boxes):
    box = boxes()
    assert network(box).startswith("container:")
    interfaces = box.run("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '").stdout.split()
    assert interfaces == ["lo"]
    for path in ("/etc/hosts", "/etc/resolv.conf", "/etc/hostname"):
        wrote = box.exec(f"echo planted >> {path}", user="0:0", timeout=30)
        assert not wrote.ok and "Read-only" in wrote.stderr, path


@pytest.mark.docker
def test_a_sandbox_with_a_writable_root_gets_a_namespace_of_its_own(boxes, small_config):
    box = boxes(small_config.model_copy(update={"read_only": False}))
    assert network(box) == "none"


@pytest.mark.docker
def test_a_holder_that_died_is_let_go_and_the_sandbox_still_starts(boxes):
    first = boxes()
    mode = network(first)
    first.close()
    returned(mode)
    client().api.kill(mode.removeprefix("container:"))
    box = boxes()
    assert network(box) != mode
    assert box.run("echo alive").stdout.strip() == "alive"


class FakeHolder(Holder):
    def __init__(self, name: str, gone: list[str]) -> None:
        self.id, self.gone, self.left = name, gone, [0]

    def sockets(self, timeout: float = 5.0) -> int | None:
        return self.left.pop(0) if self.left else 0

    def let_go(self) -> None:
        self.gone.append(self.id)


def fake_holders(gone: list[str]) -> NetnsHolders:
    names = iter(f"h{i}" for i in range(100))
    made = NetnsHolders(lambda kwargs, urgent: FakeHolder(next(names), gone))

    def watch() -> bool:
        if made._stream is None:
            made._stream = object()  # a stream that breaks only when a test says so
        return True

    made._watch = watch  # type: ignore[method-assign]
    return made


ELIGIBLE = {"network_mode": "none", "read_only": True, "cap_drop": ["ALL"], "image": "i"}


@pytest.mark.parametrize(
    "change",
    [
        {"network_mode": "bridge"},
        {"read_only": False},
        {"runtime": "runsc"},
        {"cap_drop": []},
        {"cap_add": ["NET_ADMIN"]},
        {"privileged": True},
    ],
)
def test_only_a_read_only_network_less_capability_less_runc_container_is_leased(change):
    gone: list[str] = []
    assert fake_holders(gone).lease({**ELIGIBLE, "cap_add": ["SETUID"]}) is not None
    assert fake_holders(gone).lease({**ELIGIBLE, **change}) is None


@pytest.mark.parametrize("setting", [None, "0", "yes"])
def test_reuse_is_off_unless_asked_for(monkeypatch, setting):
    if setting is None:
        monkeypatch.delenv("BOXGYM_REUSE_NETNS")
    else:
        monkeypatch.setenv("BOXGYM_REUSE_NETNS", setting)
    assert fake_holders([]).lease(ELIGIBLE) is None


def test_a_holder_comes_back_only_when_its_own_lessee_is_destroyed():
    held = fake_holders([])
    holder = held.lease(ELIGIBLE)
    assert holder is not None
    held.bind(holder, "c1")
    held._returned("c-other")
    assert held.counts()["idle"] == 0
    held._returned("c1")
    assert held.counts() == {"made": 1, "idle": 1, "leased": 0}
    assert held.lease(ELIGIBLE) is holder


def test_when_the_event_stream_breaks_every_holder_is_let_go_not_reused():
    gone: list[str] = []
    held = fake_holders(gone)
    stream = held._stream = object()
    idle, busy = held.lease(ELIGIBLE), held.lease(ELIGIBLE)
    assert idle is not None and busy is not None
    held.bind(idle, "c1")
    held._returned("c1")
    held.bind(busy, "c2")
    held._forget(stream)
    assert sorted(gone) == ["h0", "h1"] and held.counts()["idle"] == 0
    late = held.lease(ELIGIBLE)  # a new stream is opened for the next lease
    assert late is not None and late.id == "h2"
    held._stream = None  # ...but if it broke again before the bind
    held.bind(late, "c3")
    assert "h2" in gone


def test_a_holder_with_sockets_left_waits_and_one_that_does_not_answer_is_let_go():
    gone: list[str] = []
    held = fake_holders(gone)
    first, second = held.lease(ELIGIBLE), held.lease(ELIGIBLE)
    assert isinstance(first, FakeHolder) and isinstance(second, FakeHolder)
    for n, holder in enumerate((first, second)):
        held.bind(holder, f"c{n}")
        held._returned(f"c{n}")
    first.left, second.left = [3, 0], [None]  # first: TIME_WAIT left; second: dead
    third = held.lease(ELIGIBLE)
    assert third is not None and third.id == "h2"  # neither was leased again
    assert gone == ["h1"] and held.counts()["idle"] == 1
    assert held.lease(ELIGIBLE) is first  # its sockets have gone meanwhile


def test_a_pool_size_of_zero_keeps_no_idle_holder():
    gone: list[str] = []
    held = fake_holders(gone)
    first, second = held.lease(ELIGIBLE), held.lease(ELIGIBLE)
    assert first is not None and second is not None
    held.bind(first, "c1")
    held.bind(second, "c2")
    held._returned("c1")
    held.keep(0)
    assert gone == ["h0"]
    held._returned("c2")  # returned after: let go too
    assert gone == ["h0", "h1"] and held.counts()["idle"] == 0


def test_a_failed_create_never_reuses_its_holder():
    gone: list[str] = []
    held = fake_holders(gone)
    holder = held.lease(ELIGIBLE)
    assert holder is not None
    held.discard(holder)
    assert gone == ["h0"] and held.lease(ELIGIBLE) is not holder
