import pytest

import gym
from gym._tools import parse_call, tool_specs


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
        ({"name": "x", "arguments": "{broken"}, "not valid JSON"),
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
