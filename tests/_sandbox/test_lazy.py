"""Lazy sandboxes: no container until a command needs one; none for an episode without tools.

The unit tests stand a `LocalSandbox` in for the container; the docker-marked ones count
the containers a real episode starts.
"""

from __future__ import annotations

import pytest

import gym
from gym._sandbox import LazySandbox, LocalSandbox, Manifest, SandboxConfig, default_sandboxes
from gym.authoring import env_of
from gym.errors import SandboxUnavailable


class Starts:
    """A `start` that makes local sandboxes and remembers them."""

    def __init__(self) -> None:
        self.made: list[LocalSandbox] = []
        self.released: list[LocalSandbox] = []

    def lazy(self) -> LazySandbox:
        return LazySandbox(SandboxConfig(image="x"), start=self.start, release=self.release)

    def start(self) -> LocalSandbox:
        self.made.append(LocalSandbox(SandboxConfig(image="x")))
        return self.made[-1]

    def release(self, box) -> None:
        self.released.append(box)
        box.close()


def seeded(starts: Starts) -> LazySandbox:
    box = starts.lazy()
    files = {"solution.py": b"x = 1\n", "pkg/data.txt": b"d\n"}
    box.put_files("/workspace", files, via_shell=True)
    box.baseline = Manifest.of_files("/workspace", files)
    return box


def test_setup_writes_are_held_and_an_unused_sandbox_starts_nothing():
    starts = Starts()
    box = seeded(starts)
    assert box.final_diff() == [] and box.diff() == []
    box.kill_processes()
    box.ensure_running()
    box.close()
    assert starts.made == [] and box.closed and not box.started


def test_the_first_command_starts_it_and_replays_the_writes():
    starts = Starts()
    box = seeded(starts)
    assert box.run("cat solution.py").stdout == "x = 1\n"
    assert len(starts.made) == 1 and box.started
    assert box.read_file("pkg/data.txt") == b"d\n"
    box.run("echo y > new.txt && rm solution.py")
    changes = {(c.path.rsplit("/", 1)[-1], c.kind) for c in box.final_diff()}
    assert {("new.txt", "added"), ("solution.py", "deleted")} <= changes
    box.close()
    assert starts.released == starts.made, "the started sandbox is given back once"
    assert len(starts.made) == 1


def test_a_closed_lazy_sandbox_is_unavailable():
    box = Starts().lazy()
    box.close()
    with pytest.raises(SandboxUnavailable):
        box.run("true")
    with pytest.raises(SandboxUnavailable):
        box.ensure_running()


@pytest.mark.docker
@pytest.mark.parametrize("calls", [0, 1])
def test_a_real_episode_starts_an_agent_container_only_for_a_tool_call(engine, calls):
    env = gym.make("boxgym/PyFunc-v0", run="pytest")
    try:
        task = env_of(env).tasks[0].id
        before = default_sandboxes().counts()
        env.reset(options={"task": task})
        for _ in range(calls):
            env.step({"name": "bash", "arguments": {"command": "ls"}})
        env.step({"name": "submit", "arguments": {}})
        after = default_sandboxes().counts()
    finally:
        env.close()
    started = sum(
        after.get(f"agent.{k}", 0) - before.get(f"agent.{k}", 0) for k in ("cold", "spare_used")
    )
    assert started == calls
