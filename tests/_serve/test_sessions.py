"""Sessions over the wire: openenv-core's own client against the server, in this process.

The toy family (local sandboxes, no Docker) behind a real uvicorn server on a free port.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest
import toy_env
from openenv.core.generic_client import GenericEnvClient
from websockets.exceptions import ConnectionClosed

from gym._serve._app import ServeConfig, listening


async def episode(
    url: str, task: str, answer: str, together: asyncio.Barrier | None = None
) -> tuple[object, dict]:
    async with GenericEnvClient(base_url=url) as client:
        first = await client.reset(task_id=task)
        assert first.observation["task_id"] == task
        if together is not None:  # every session is open before any goes on
            await asyncio.wait_for(together.wait(), timeout=30)
        await client.step(
            {"tool": "write_file", "arguments": {"path": "answer.txt", "content": answer}}
        )
        end = await client.step({"tool": "submit"})
        return end, await client.state()


def test_openenvs_client_runs_an_episode_and_leaving_closes_its_environment(served, closes):
    url = served()
    end, state = asyncio.run(episode(url, "add", "5"))
    assert end.done and end.reward == 1.0
    assert end.observation["outcome"] == "pass" and end.observation["verdict"]["outcome"] == "pass"
    assert state["task_id"] == "add" and state["step_count"] == 2 and state["outcome"] == "pass"
    deadline = time.monotonic() + 10
    while not closes and time.monotonic() < deadline:
        time.sleep(0.05)
    assert closes == ["add"]


def test_sessions_run_at_once_each_with_its_own_environment(served, closes):
    url = served(max_sessions=4)

    async def all_at_once() -> list[tuple[object, dict]]:
        together = asyncio.Barrier(4)
        return await asyncio.gather(
            episode(url, "add", "5", together),
            episode(url, "greet", "hello", together),
            episode(url, "add", "wrong", together),
            episode(url, "greet", "wrong", together),
        )

    results = asyncio.run(all_at_once())
    outcomes = [(state["task_id"], end.observation["outcome"]) for end, state in results]
    assert outcomes == [("add", "pass"), ("greet", "pass"), ("add", "fail"), ("greet", "fail")]
    assert len({state["episode_id"] for _, state in results}) == 4


def test_a_session_over_the_limit_is_refused(served):
    url = served(max_sessions=1)

    async def two() -> tuple[BaseException, object]:
        async with GenericEnvClient(base_url=url) as first:
            await first.reset(task_id="add")
            second = GenericEnvClient(base_url=url)
            # openenv sends its error, then closes: the client reads one or the other first
            with pytest.raises((RuntimeError, ConnectionClosed)) as caught:
                await second.reset(task_id="add")
            with contextlib.suppress(ConnectionClosed):
                await second.close()
            end = await first.step({"tool": "submit"})  # the first session is unharmed
        return caught.value, end

    refused, end = asyncio.run(two())
    if isinstance(refused, RuntimeError):
        assert "CAPACITY_REACHED" in str(refused) and "1/1 sessions" in str(refused)
    assert end.done and end.observation["outcome"] == "fail"


def test_an_idle_session_is_closed_after_its_timeout(served, closes):
    url = served(session_timeout=1)  # openenv's reaper looks every 5 s at the least

    async def idle() -> tuple[dict, dict, str]:
        async with GenericEnvClient(base_url=url) as client:
            await client.reset(task_id="add")
            await client.step({"tool": "bash", "arguments": {"command": "true"}})
            before = await client.state()
            deadline = time.monotonic() + 20
            while not closes and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
            after = await client.state()
            with pytest.raises(RuntimeError, match="session is closed") as caught:
                await client.step({"tool": "submit"})
            return before, after, str(caught.value)

    before, after, message = asyncio.run(idle())
    assert closes == ["add"]
    assert before["sandbox"] not in (None, "lazy") and after["sandbox"] is None
    assert "connect again" in message


def test_a_step_longer_than_the_timeout_keeps_its_session(served, closes):
    """The reaper looks every 5 s at the least: a 7 s call outlives a 1 s timeout's look."""
    url = served(session_timeout=1)

    async def slow() -> tuple[object, list[str]]:
        async with GenericEnvClient(base_url=url) as client:
            await client.reset(task_id="add")
            await client.step({"tool": "bash", "arguments": {"command": "sleep 7"}})
            closed_during = list(closes)
            await client.step(
                {"tool": "write_file", "arguments": {"path": "answer.txt", "content": "5"}}
            )
            return await client.step({"tool": "submit"}), closed_during

    end, closed_during = asyncio.run(slow())
    assert closed_during == []
    assert end.done and end.observation["outcome"] in ("pass", "fail")


def test_the_listening_socket_turns_nagle_off_for_every_connection():
    """asyncio sets TCP_NODELAY only on a TCP-protocol socket: else 40 ms a message."""
    import socket

    _, sock, _ = listening(ServeConfig(env_id=toy_env.ENV_ID, port=0))
    with sock:
        assert sock.proto == socket.IPPROTO_TCP
