"""Tools declared as JSON schemas, by a family and by a task: the episode's tool table.

The table is the family's methods, then its ``tool_schemas``, then the task's ``tools``,
minus the task's ``drop_tools``; schema tools run through the family's ``call_tool``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from desk_env import GET, PUT, TASKS, DeskEnv, task

import gym


def names(info: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in info["tools"]]


def test_the_family_s_schema_tools_join_its_methods():
    env = DeskEnv()
    _, info = env.reset(options={"task": "one"})
    assert names(info) == ["submit", "put", "get"]
    shown = {k: v for k, v in PUT["function"].items() if k != "x-boxgym-kind"}
    assert info["tools"][1] == {"type": "function", "function": shown}  # the kind is boxgym's
    assert env.tools["get"][0].kind == "read" and env.tools["put"][0].kind == "write"
    assert env.action_space.contains(
        {"name": "get", "arguments": {"key": "a"}}
    ) and not env.action_space.contains({"name": "count", "arguments": {}})
    env.close()


def test_a_task_adds_and_drops_tools():
    env = DeskEnv()
    _, info = env.reset(options={"task": "own"})
    assert names(info) == ["submit", "put", "count", "times"]
    assert env.tools["count"][0].kind == "read" and env.tools["times"][0].kind == "write"
    assert env.action_space.contains({"name": "count", "arguments": {}})
    obs, *_ = env.step({"name": "get", "arguments": {"key": "a"}})
    assert obs.startswith("Error: unknown tool 'get'")
    env.step({"name": "times", "arguments": {"key": "x", "n": 3}})
    assert env.step({"name": "count", "arguments": {}})[0] == "1"
    _, info = env.reset(options={"task": "one"})  # the next episode has its own table
    assert names(info) == ["submit", "put", "get"]
    env.close()


def test_a_task_tool_replaces_the_family_s_of_the_same_name():
    own_get = {"name": "get", "description": "Peek.", "parameters": {"type": "object"}}
    env = DeskEnv(tasks=[task("t", "p", [{}], tools=[own_get])])
    _, info = env.reset(options={"task": "t"})
    assert names(info) == ["submit", "put", "get"]
    assert info["tools"][2]["function"]["description"] == "Peek."
    assert env.tools["get"][0].kind == "write"  # no x-boxgym-kind: write
    env.close()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"key": "a"}, "'value' is required"),
        ({"key": "a", "value": 1}, "'value': expected string, got integer"),
        ({"key": "a", "value": "1", "extra": 2}, "'extra' is not an argument of this tool"),
    ],
)
def test_strict_validation_rejects_the_step(arguments, message):
    env = DeskEnv()
    env.reset(options={"task": "one"})
    obs, reward, terminated, truncated, info = env.step({"name": "put", "arguments": arguments})
    assert obs.startswith("Error: invalid arguments for put") and message in obs
    assert (reward, terminated, truncated) == (0.0, False, False) and message in info["error"]
    assert env.trace[-1].call is None and env.trace[-1].error
    env.close()


def test_lenient_validation_coerces_and_notes_what_it_did():
    env = DeskEnv()
    env.reset(options={"task": "own"})
    obs, *_ = env.step({"name": "times", "arguments": {"key": "x", "n": "3", "loud": True}})
    assert obs == (
        "Note: 'loud' is not an argument of times; it was left out.\n"
        "Note: 'n' was read as integer 3.\n"
        "stored"
    )
    assert env.trace[-1].call is not None and env.trace[-1].call.arguments["n"] == "3"
    obs, *_ = env.step({"name": "times", "arguments": {"key": "x", "n": "3.5"}})
    assert obs.startswith("Error:") and "'n': expected integer, got string" in obs
    *_, info = env.step({"name": "submit", "arguments": {}})
    assert info["verdict"]["outcome"] == "pass"


def test_dropping_a_tool_there_is_not_or_the_final_tool_is_refused():
    env = DeskEnv(tasks=[task("a", "p", [{}], drop_tools=["nope"])])
    with pytest.raises(gym.ConfigError, match="drop_tools names 'nope', which is not one"):
        env.reset(options={"task": "a"})
    env = DeskEnv(tasks=[task("b", "p", [{}], drop_tools=["submit"])])
    with pytest.raises(gym.ConfigError, match="its final tool; keep it"):
        env.reset(options={"task": "b"})


class NoRunner(DeskEnv):
    """Declares schema tools and forgets `call_tool`."""

    call_tool = gym.ContainerEnv.call_tool  # type: ignore[assignment]


def test_schema_tools_without_call_tool_are_refused_at_reset():
    with pytest.raises(gym.ConfigError, match="does not implement call_tool"):
        NoRunner().reset(options={"task": "one"})


class BadSchemas(DeskEnv):
    tool_schemas: ClassVar[tuple[dict[str, Any], ...]] = (
        PUT,
        {"name": "bad", "parameters": {"type": "object", "properties": {"n": {"type": "dict"}}}},
    )


def test_a_family_s_bad_tool_schema_says_where():
    with pytest.raises(gym.ConfigError, match=r"BadSchemas.tool_schemas: tool 'bad': 'parameters"):
        BadSchemas()


def test_the_tools_of_every_desk_task_are_valid():
    env = DeskEnv()
    for t in TASKS:
        table = env.tool_table(t)
        assert "submit" in table and all(spec.name == name for name, (spec, _) in table.items())
    assert GET["function"]["name"] not in env.tool_table(TASKS[-1])
