import json
import random
import time

import pytest
from pydantic import ValidationError

import gym
from gym._core._tools import (
    ToolCall,
    decode_arguments,
    json_objects,
    parse_call,
    recorded,
    scan_json,
    tool_specs,
)


class Demo:
    @gym.tool(kind="read")
    def lookup(self, key: str, limit: int = 10) -> str:
        """Look a key up.

        Args:
            key: the key to find.
            limit: the most results,
                counted in rows.
        """
        return key

    @gym.tool(kind="final")
    def submit(self) -> str:
        """Finish."""
        return ""


def test_schema_comes_from_signature_and_docstring():
    specs = tool_specs(Demo())
    schema = specs["lookup"][0].openai_schema()
    fn = schema["function"]
    assert schema["type"] == "function" and fn["description"] == "Look a key up."
    assert fn["parameters"]["required"] == ["key"]
    props = fn["parameters"]["properties"]
    assert props["key"] == {"type": "string", "description": "the key to find."}
    assert props["limit"]["description"] == "the most results, counted in rows."
    assert specs["submit"][0].kind == "final"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "'key' is required"),
        ({"key": 3}, "'key': input should be a valid string"),
        ({"key": "a", "limit": "5"}, "'limit': input should be a valid integer"),
        ({"key": "a", "other": 1}, "'other' is not an argument"),
    ],
)
def test_bad_arguments_give_messages_a_model_can_act_on(args, message):
    spec = tool_specs(Demo())["lookup"][0]
    with pytest.raises(ValueError, match=message):
        spec.validate_args(args)


@pytest.mark.parametrize(
    "action",
    [
        {"name": "lookup", "arguments": {"key": "a"}},
        {"name": "lookup", "arguments": '{"key": "a"}'},
        '{"name": "lookup", "arguments": {"key": "a"}}',
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "lookup", "arguments": '{"key":"a"}'},
        },
    ],
)
def test_parse_call_accepts_the_shapes_models_produce(action):
    call = parse_call(action)
    assert call.name == "lookup" and call.arguments == {"key": "a"}


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("not json at all", "not JSON"),
        ({"arguments": {}}, "needs a 'name'"),
        ({"name": "x", "arguments": "{broken"}, "not JSON"),
        ({"name": "x", "arguments": "[1, 2]"}, "must be a JSON object"),
        (42, "must be an object"),
    ],
)
def test_parse_call_rejects_what_is_not_a_call(action, message):
    with pytest.raises(ValueError, match=message):
        parse_call(action)


class OddlyIndented:
    @gym.tool(kind="read")
    def two(self, path: str, depth: int = 1) -> str:
        """List a folder.

        Args:
          path (str): the folder,
            relative to the workspace.
          depth: how deep to go.

        Returns:
          the listing.
        """
        return path

    def tabs(self, path: str) -> str:
        return path

    tabs.__doc__ = "Read a file.\n\n\tArgs:\n\t\tpath: the file,\n\t\t\twith a tab.\n"
    tabs = gym.tool(kind="read")(tabs)

    @gym.tool(kind="read")
    def garbled(self, path: str) -> str:
        """Summary only.

        Args:
            this line has no colon
        """
        return path


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("two", {"path": "the folder, relative to the workspace.", "depth": "how deep to go."}),
        ("tabs", {"path": "the file, with a tab."}),
        ("garbled", {}),
    ],
)
def test_argument_descriptions_read_any_consistent_indentation(name, expected):
    fn = tool_specs(OddlyIndented())[name][0].openai_schema()["function"]
    got = {
        k: v["description"] for k, v in fn["parameters"]["properties"].items() if "description" in v
    }
    assert got == expected and fn["description"].endswith(".")


# -- bounded and total: what a hostile caller or model sends ---------------------------------

DEEP = 100_000


def deep_dict(depth: int) -> dict:
    top: dict = {}
    here = top
    for _ in range(depth):
        here["a"] = {}
        here = here["a"]
    return top


def deep_list(depth: int) -> list:
    top: list = []
    here = top
    for _ in range(depth):
        here.append([])
        here = here[0]
    return top


def deep_text(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


@pytest.mark.parametrize(
    "action",
    [
        pytest.param(
            {"name": "lookup", "arguments": {"key": "a", "x": deep_dict(DEEP)}}, id="dict"
        ),
        pytest.param({"name": "lookup", "arguments": deep_text(DEEP)}, id="json-text"),
        pytest.param({"name": "lookup", "arguments": {"key": deep_list(DEEP)}}, id="lists"),
        pytest.param('{"name": "lookup", "arguments": ' + deep_text(DEEP) + "}", id="whole-text"),
        pytest.param("[" * DEEP + "]" * DEEP, id="text-lists"),
        pytest.param("[" * DEEP + "}", id="unmatched"),
    ],
)
def test_an_action_nested_100000_levels_deep_is_refused_quickly(action):
    start = time.monotonic()
    with pytest.raises(ValueError, match="deeper than"):
        parse_call(action)
    assert time.monotonic() - start < 2.0


def test_the_depth_bound_is_exact_on_decoded_arguments():
    at_bound = {"key": deep_list(30)}  # 32 containers: the object and 31 arrays
    assert parse_call({"name": "lookup", "arguments": at_bound}).arguments == at_bound
    assert parse_call({"name": "lookup", "arguments": json.dumps(at_bound)}).arguments == at_bound
    for over in ({"key": deep_list(31)}, json.dumps({"key": deep_list(31)})):
        with pytest.raises(ValueError, match="deeper than 32"):
            parse_call({"name": "lookup", "arguments": over})


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ('{"key": NaN}', "not JSON"),
        ('{"key": -Infinity}', "not JSON"),
        ('{"key": 1e400}', "not JSON"),
        ('{"key": ' + "9" * 5000 + "}", "not JSON"),
        ({"key": float("nan")}, "not a JSON number"),
        ({"key": {1: "a"}}, "not a string"),
        ({"key": object()}, "not a JSON value"),
        ({f"k{i}": 1 for i in range(100_001)}, "more than 100000 values"),
        ({"key": "x" * (8 << 20) + "y"}, "characters of text"),
        ("{" + '"key": "' + "x" * (8 << 20) + '"}', "characters long"),
        (b'{"key": 1}', "not a JSON value"),
    ],
)
def test_arguments_out_of_bounds_or_not_json_are_refused(arguments, message):
    with pytest.raises(ValueError, match=message):
        decode_arguments("lookup", arguments)


def test_a_value_that_holds_itself_ends_at_the_depth_bound():
    loop: dict = {}
    loop["a"] = loop
    with pytest.raises(ValueError, match="deeper than"):
        parse_call({"name": "lookup", "arguments": loop})


@pytest.mark.parametrize(
    ("name", "message"),
    [("x" * 129, "at most 128"), ("ba\ud800sh", "not valid text"), ("a\x00b", "not valid text")],
)
def test_a_tool_name_no_tool_could_have_is_refused(name, message):
    with pytest.raises(ValueError, match=message):
        parse_call({"name": name, "arguments": {}})


def test_no_tool_call_holding_too_much_can_be_made():
    with pytest.raises(ValidationError, match="deeper than 32"):
        ToolCall(name="lookup", arguments={"key": deep_dict(DEEP)})
    with pytest.raises(ValidationError, match="not a JSON number"):
        ToolCall(name="lookup", arguments={"key": float("inf")})


def test_a_rejected_action_is_recorded_bounded_and_serializable():
    kept = {"name": "lookup", "arguments": {"key": "a"}}
    assert recorded(kept) == kept
    assert recorded({"name": "x", "arguments": deep_dict(DEEP)}).startswith("<a dict not kept")
    assert recorded(deep_list(DEEP)).startswith("<a list not kept")
    long = recorded("y" * (1 << 20))
    assert len(long) < 70_000 and long.endswith("characters not kept]")
    assert recorded("a\ud800") == "a\\ud800"
    assert recorded({"name": "a\udfff"}) == '{"name": "a\\udfff"}'
    for value in (kept, deep_dict(DEEP), "z\ud800" * 40_000, {"n": "\ud800"}, b"\xff" * 10):
        json.dumps(recorded(value)).encode("utf-8")  # never raises


def test_scanning_model_text_is_linear_and_total():
    many = '{"a": [' * 50_000  # each a start the decoder reads far before it fails
    start = time.monotonic()
    found, problem = scan_json(many)
    assert found == [] and problem
    assert time.monotonic() - start < 2.0
    found, problem = scan_json('{"a": 1} and ' + deep_text(DEEP))
    assert found == [{"a": 1}] and "deeper than" in problem
    assert json_objects('{"a": NaN} {"b": 2}') == [{"b": 2}]


_PIECES = ["{", "}", "[", "]", '"', ":", ",", '"a"', "1", "-", "1e999", "NaN", "\\ud800", " ", "x"]


@pytest.mark.parametrize("seed", range(4))
def test_parse_call_raises_nothing_but_value_error_on_random_text(seed):
    rng = random.Random(seed)
    for _ in range(500):
        text = "".join(rng.choice(_PIECES) for _ in range(rng.randrange(1, 60)))
        for action in (text, {"name": "lookup", "arguments": text}):
            try:
                parse_call(action)
            except ValueError:
                pass
