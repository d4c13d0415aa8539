"""Tools declared as JSON schemas: checked, validated strictly or leniently; task fields.

Strict is what a method's tool does (an unknown argument, a missing one or a wrong JSON
type is refused); lenient coerces only where nothing is lost and drops unknown arguments
with a note.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import gym
from gym._core._models import load_tasks
from gym._core._schemas import SchemaTool, function_schema

PARAMS = {
    "type": "object",
    "properties": {
        "n": {"type": "integer"},
        "x": {"type": "number"},
        "flag": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "integer"}},
        "label": {"type": "string"},
        "mode": {"type": "string", "enum": ["a", "b"]},
    },
    "required": ["n"],
}
TOOL = {"name": "f", "description": "Do f.", "parameters": PARAMS}


def test_both_forms_give_the_canonical_schema():
    bare = function_schema(TOOL)
    assert bare == {"type": "function", "function": TOOL}
    assert function_schema(bare) == bare
    empty = function_schema({"name": "g"})
    assert empty["function"]["parameters"] == {"type": "object", "properties": {}}
    assert function_schema({**TOOL, "x-boxgym-kind": "final"})["function"]["x-boxgym-kind"] == (
        "final"
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("f", "must be an object"),
        ({"description": "no name"}, "needs a 'name'"),
        ({"name": "f", "parameters": {"type": "array"}}, "must be a JSON schema of an object"),
        ({"name": "f", "parameters": {"type": "object", "required": "n"}}, "'parameters"),
        ({"name": "f", "x-boxgym-kind": "delete"}, "use 'read', 'write' or 'final'"),
        ({"name": "f", "descripton": "typo"}, r"unknown key\(s\) \['descripton'\]"),
    ],
)
def test_a_bad_schema_says_what_is_wrong(raw, message):
    with pytest.raises(ValueError, match=message):
        function_schema(raw)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "'n' is required"),
        ({"n": "3"}, "'n': expected integer, got string"),
        ({"n": 1, "tags": [1, "2"]}, "'tags[1]': expected integer, got string"),
        ({"n": 1, "mode": "c"}, "'mode': must be one of"),
        ({"n": 1, "other": 2}, "'other' is not an argument of this tool"),
        ({"n": 1, "label": "\ud800"}, "unpaired surrogate"),
    ],
)
def test_strict_refuses_what_a_method_tool_refuses(args, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        SchemaTool.of(TOOL).read_args(args)


@pytest.mark.parametrize(
    ("args", "read"),
    [
        ({"n": "3"}, {"n": 3}),
        ({"n": " -12 "}, {"n": -12}),
        ({"n": "4.0"}, {"n": 4}),
        ({"n": 1, "x": "2.5"}, {"n": 1, "x": 2.5}),
        ({"n": 1, "flag": "True"}, {"n": 1, "flag": True}),
        ({"n": 1, "tags": "[1, 2]"}, {"n": 1, "tags": [1, 2]}),
        ({"n": 1, "tags": ["1", 2]}, {"n": 1, "tags": [1, 2]}),
        ({"n": 1, "label": 7}, {"n": 1, "label": "7"}),
        ({"n": 1, "label": 2.5}, {"n": 1, "label": "2.5"}),
    ],
)
def test_lenient_coerces_what_loses_nothing(args, read):
    values, notes = SchemaTool.of(TOOL, lenient=True).read_args(args)
    assert values == read and notes


@pytest.mark.parametrize("lenient", [False, True])
def test_an_integral_float_for_an_integer_reaches_the_tool_as_an_int(lenient):
    """BFCL's tools echoed ``12446.0`` back, failing correct work compared as text."""
    values, _ = SchemaTool.of(TOOL, lenient=lenient).read_args(
        {"n": 12446.0, "x": 2.0, "tags": [1.0, 3]}
    )
    assert values == {"n": 12446, "x": 2.0, "tags": [1, 3]}
    assert type(values["n"]) is int and type(values["x"]) is float
    assert all(type(t) is int for t in values["tags"])


def _choice(*branches: dict) -> dict:
    return {
        "type": "function",
        "function": {
            "name": "pick",
            "parameters": {
                "type": "object",
                "properties": {"v": {"anyOf": list(branches)}},
                "required": ["v"],
            },
        },
    }


@pytest.mark.parametrize(
    ("branches", "sent", "read"),
    [
        (({"type": "integer"}, {"type": "string"}), 7.0, 7),
        (({"type": "string"}, {"type": "integer"}), 7.0, 7),
        (({"type": "integer"}, {"type": "number"}), 7.0, 7.0),  # it may be meant as a float
        (({"type": "array", "items": {"type": "integer"}}, {"type": "null"}), [2.0], [2]),
        (
            ({"type": "object", "properties": {"id": {"type": "integer"}}}, {"type": "string"}),
            {"id": 5.0},
            {"id": 5},
        ),
    ],
)
def test_an_integral_float_under_any_of_is_read_by_the_branch_it_matches(branches, sent, read):
    values, _ = SchemaTool.of(_choice(*branches)).read_args({"v": sent})
    assert values == {"v": read} and repr(values["v"]) == repr(read)


@pytest.mark.parametrize(
    "args",
    [
        {"n": "3.5"},  # an integer cannot hold it
        {"n": "1e400"},  # out of a number's range
        {"n": 1, "x": "1e999"},
        {"n": True},  # a boolean is no number
        {"n": 1, "flag": 1},
        {"n": 1, "label": True},
        {"n": 1, "tags": "[1, "},  # not JSON
    ],
)
def test_lenient_refuses_what_would_lose_something(args):
    with pytest.raises(ValueError, match="invalid arguments for f"):
        SchemaTool.of(TOOL, lenient=True).read_args(args)


def test_lenient_drops_unknown_arguments_with_a_note():
    values, notes = SchemaTool.of(TOOL, lenient=True).read_args({"n": 1, "zz": 0})
    assert values == {"n": 1} and notes == ["'zz' is not an argument of f; it was left out"]


def test_a_schema_that_allows_more_takes_every_argument():
    open_tool = {**TOOL, "parameters": {**PARAMS, "additionalProperties": True}}
    assert SchemaTool.of(open_tool).read_args({"n": 1, "zz": 0}) == ({"n": 1, "zz": 0}, [])


def test_many_errors_are_counted_not_all_shown():
    many = {"name": "m", "parameters": {"type": "object", "required": [f"a{i}" for i in range(9)]}}
    with pytest.raises(ValueError, match=r"\(and 4 more\)"):
        SchemaTool.of(many).read_args({})


# -- task fields ------------------------------------------------------------------------


def write_task(root: Path, name: str, toml: str, tools: Any = None) -> Path:
    folder = root / "fam" / name
    folder.mkdir(parents=True)
    (folder / "task.toml").write_text(toml)
    if tools is not None:
        (folder / "tools.json").write_text(json.dumps(tools))
    return folder


def test_task_toml_declares_turns_tools_and_the_rest(tmp_path):
    write_task(
        tmp_path,
        "a",
        'prompt = "First."\nturns = ["Second.", "Third."]\ndrop_tools = ["bash"]\n'
        'lenient = true\nuser = "A busy customer."\nsystem_prompt = "Be brief."\n'
        '[[tools]]\nname = "f"\ndescription = "Do f."\n'
        '[tools.parameters]\ntype = "object"\nrequired = ["n"]\n'
        '[tools.parameters.properties.n]\ntype = "integer"\n',
    )
    write_task(tmp_path, "b", 'prompt = "Go."\n', tools=[TOOL, {"name": "g"}])
    a, b = load_tasks(tmp_path, "fam")
    assert a.turns == ("Second.", "Third.") and a.drop_tools == ("bash",)
    assert a.lenient and a.user == "A busy customer." and a.data == {"system_prompt": "Be brief."}
    assert a.tools[0]["function"]["parameters"]["properties"] == {"n": {"type": "integer"}}
    assert [t["function"]["name"] for t in b.tools] == ["f", "g"]
    assert b.tools[0] == {"type": "function", "function": TOOL}


@pytest.mark.parametrize(
    ("toml", "tools", "message"),
    [
        ('prompt = "p"\n[[tools]]\nname = "f"\n', [TOOL], "both in task.toml and in tools.json"),
        ('prompt = "p"\n', {"name": "f"}, "must hold a JSON list"),
        ('prompt = "p"\n[[tools]]\nname = "f"\n[[tools]]\nname = "f"\n', None, "more than once"),
        ('prompt = "p"\n[[tools]]\ndescription = "x"\n', None, r"tools\[0\]: a tool call needs"),
        ('prompt = "p"\nsystem_prompt = 3\n', None, "system_prompt must be a string"),
        ('prompt = "p"\nturns = "one"\n', None, "turns"),
    ],
)
def test_a_bad_task_field_leaves_the_task_out_and_says_why(tmp_path, toml, tools, message):
    write_task(tmp_path, "bad", toml, tools)
    write_task(tmp_path, "good", 'prompt = "p"\n')
    found = load_tasks(tmp_path, "fam")
    assert [t.id for t in found] == ["good"]
    assert len(found.problems) == 1 and re.search(message, found.problems[0])


def test_an_unchanged_task_dumps_and_hashes_as_before():
    """Fields added later are left out at their defaults: validation fingerprints keep."""
    plain = gym.Task(id="t", family="f", prompt="p", data={"k": 1})
    assert plain.model_dump_json() == (
        '{"id":"t","family":"f","split":"train","prompt":"p","tags":{},"allowed_paths":[],'
        '"hidden_hash":"","path":"","data":{"k":1}}'
    )
    turned = plain.model_copy(update={"turns": ("next",), "lenient": True})
    assert json.loads(turned.model_dump_json())["turns"] == ["next"]
    assert gym.Task.model_validate_json(turned.model_dump_json()) == turned
