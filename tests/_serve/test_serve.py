"""`gym serve boxgym/PyFunc-v0` answers openenv-core's client: real server, real containers.

The server is the command itself, on a free port; each episode is a session of
openenv-core's `GenericEnvClient`, 8 at once; the oracle's calls (the task's gold
solution) come from the environment here, as `gym run --policy oracle` takes them.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import docker
import pytest
from openenv.core.generic_client import GenericEnvClient

import gym
from gym.authoring import env_of

pytestmark = pytest.mark.docker

GYM = os.path.join(os.path.dirname(sys.executable), "gym")
ENV_ID = "boxgym/PyFunc-v0"
AT_ONCE = 8


@pytest.fixture
def serve(engine: None) -> Iterator[Callable[..., tuple[str, subprocess.Popen[str]]]]:
    """``serve(*options)`` starts ``gym serve ENV_ID --port 0`` and returns its URL and process."""
    procs: list[subprocess.Popen[str]] = []

    def start(*options: str) -> tuple[str, subprocess.Popen[str]]:
        proc = subprocess.Popen(
            [GYM, "serve", ENV_ID, "--port", "0", *options], stdout=subprocess.PIPE, text=True
        )
        procs.append(proc)
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), f"gym serve printed {url!r}"
        return url, proc

    yield start
    hung = []
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            hung.append(proc.pid)
        if proc.stdout:
            proc.stdout.close()
    assert not hung, f"gym serve did not stop on SIGTERM within 30 s: {hung}"


def containers(label: str) -> list[str]:
    """Containers (running or not) with this label, as ``docker ps -a`` lists them."""
    plain = docker.from_env()
    try:
        return [c.id for c in plain.containers.list(all=True, filters={"label": label})]
    finally:
        plain.close()


class Sessions:
    """Runs episodes through the server, at most ``AT_ONCE`` sessions at a time."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.env = env_of(gym.make(ENV_ID))
        self.open = self.peak = 0

    async def episode(self, task: Any, policy: str, limit: asyncio.Semaphore) -> dict[str, Any]:
        calls = self.env.oracle_calls(task) if policy == "oracle" else []
        async with limit, GenericEnvClient(base_url=self.url, message_timeout_s=240) as client:
            self.open += 1
            self.peak = max(self.peak, self.open)
            try:
                result = await client.reset(task_id=task.id, seed=0)
                assert result.observation["task_id"] == task.id and result.observation["tools"]
                await asyncio.sleep(0.3)  # hold the session open a moment: let others overlap
                for call in calls:
                    result = await client.step({"tool": call.name, "arguments": call.arguments})
                if not result.done:
                    result = await client.step({"tool": "submit"})
                state = await client.state()
            finally:
                self.open -= 1
        assert result.done and state["done"] and state["task_id"] == task.id
        return {"policy": policy, "reward": result.reward, **result.observation}


def test_oracle_passes_and_noop_fails_every_episode_8_sessions_at_once(serve, owned):
    url, proc = serve("--max-sessions", str(AT_ONCE))
    sessions = Sessions(url)
    tasks = sessions.env.tasks[:10]
    plan = [(task, policy) for task in tasks for policy in ("oracle", "noop")]  # 20 episodes

    async def run_all() -> list[dict[str, Any]]:
        limit = asyncio.Semaphore(AT_ONCE)
        return await asyncio.gather(*(sessions.episode(t, p, limit) for t, p in plan))

    started = time.monotonic()
    ends = asyncio.run(run_all())
    took = time.monotonic() - started
    oracle = [e for e in ends if e["policy"] == "oracle"]
    noop = [e for e in ends if e["policy"] == "noop"]
    assert len(oracle) == len(noop) == 10
    assert [(e["outcome"], e["reward"]) for e in oracle] == [("pass", 1.0)] * 10, oracle
    assert [(e["outcome"], e["reward"]) for e in noop] == [("fail", 0.0)] * 10, noop
    assert all(e["verdict"]["task_id"] == e["task_id"] for e in ends)
    assert sessions.peak == AT_ONCE
    print(f"20 episodes, {AT_ONCE} at once, in {took:.1f} s")
    proc.terminate()
    assert proc.wait(timeout=30) in (0, 143)  # SIGTERM: sessions closed, then it leaves
    deadline = time.monotonic() + 30
    while owned(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert owned(proc.pid) == [], "the server's containers outlived it"


def test_a_session_closed_or_timed_out_leaves_no_container(serve):
    url, _ = serve("--session-timeout", "3")

    async def session(leave: bool) -> str:
        client = GenericEnvClient(base_url=url)
        await client.connect()
        await client.reset(seed=0)
        await client.step({"tool": "bash", "arguments": {"command": "echo started"}})
        sandbox = (await client.state())["sandbox"]
        assert sandbox not in (None, "lazy")
        label = f"boxgym.episode=sandbox-{sandbox}"
        assert len(containers(label)) == 1  # the episode's container, as docker ps -a sees it
        if leave:
            await client.close()  # the client leaves mid-episode
        deadline = time.monotonic() + 30  # idle: the reaper looks every 5 s
        while containers(label) and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
        if not leave:
            with pytest.raises(RuntimeError, match="session is closed"):
                await client.step({"tool": "submit"})
            await client.close()
        return label

    async def both() -> list[str]:
        return await asyncio.gather(session(leave=True), session(leave=False))

    for label in asyncio.run(both()):
        assert containers(label) == [], f"{label}: the session's container is left behind"
