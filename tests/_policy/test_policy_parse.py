"""The text tool-call parser: the taught format, its tolerated variants, and garbage."""

from __future__ import annotations

import json
import random
import time

import pytest

from gym._policy._parse import CALL_FORMAT, format_call, parse_tool_call, tools_prompt

TOOLS = ("bash", "read_file", "write_file", "submit")


def test_tagged_call():
    found = parse_tool_call(
        '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>'
    )
    assert found.call is not None
    assert (found.call.name, found.call.arguments) == ("bash", {"command": "ls"})
    assert (found.error, found.found) == ("", 1)


def test_tagged_call_after_prose_and_without_closing_tag():
    text = 'I will look around.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}'
    found = parse_tool_call(text)
    assert found.call is not None and found.call.arguments == {"path": "a.py"}


def test_tagged_list_takes_the_first_and_counts_all():
    text = (
        '<tool_call>[{"name": "bash", "arguments": {"command": "pwd"}}, '
        '{"name": "submit", "arguments": {}}]</tool_call>'
    )
    found = parse_tool_call(text)
    assert found.call is not None and found.call.name == "bash"
    assert found.found == 2


def test_several_tagged_blocks():
    text = format_call("bash", {"command": "ls"}) + "\n" + format_call("submit", {})
    found = parse_tool_call(text)
    assert found.call is not None and found.call.name == "bash" and found.found == 2


def test_parameters_alias_and_string_arguments():
    found = parse_tool_call(
        '<tool_call>{"name": "bash", "parameters": {"command": "ls"}}</tool_call>'
    )
    assert found.call is not None and found.call.arguments == {"command": "ls"}
    args = json.dumps(json.dumps({"command": "ls"}))
    found = parse_tool_call(f'<tool_call>{{"name": "bash", "arguments": {args}}}</tool_call>')
    assert found.call is not None and found.call.arguments == {"command": "ls"}


def test_openai_shaped_object_inside_the_tags():
    body = {"type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
    found = parse_tool_call(f"<tool_call>{json.dumps(body)}</tool_call>")
    assert found.call is not None and found.call.arguments == {"command": "ls"}


def test_json_fence_inside_the_tags_and_trailing_text():
    text = '<tool_call>\n```json\n{"name": "submit", "arguments": {}}\n```\n</tool_call>'
    assert parse_tool_call(text).call is not None
    text = '<tool_call>{"name": "submit", "arguments": {}} and then I stop'
    assert parse_tool_call(text).call is not None


def test_arguments_missing_or_null_mean_none():
    for text in (
        '<tool_call>{"name": "submit"}</tool_call>',
        '<tool_call>{"name": "submit", "arguments": null}</tool_call>',
    ):
        found = parse_tool_call(text)
        assert found.call is not None and found.call.arguments == {}


def test_unicode_and_nested_braces_survive():
    content = 'def f():\n    return {"é": "}"}\n'
    found = parse_tool_call(format_call("write_file", {"path": "s.py", "content": content}))
    assert found.call is not None and found.call.arguments["content"] == content


def test_bare_json_object_fallback():
    text = 'Sure.\n```json\n{"name": "bash", "arguments": {"command": "cat x"}}\n```'
    found = parse_tool_call(text, TOOLS)
    assert found.call is not None and found.call.arguments == {"command": "cat x"}
    assert parse_tool_call(text, TOOLS, fallbacks=False).call is None


def test_json_that_is_not_a_call_is_not_taken():
    found = parse_tool_call('The result is {"name": "Ann", "age": 3}.', TOOLS)
    assert (found.call, found.error) == (None, "")


def test_fenced_bash_becomes_a_bash_call_only_when_bash_is_offered():
    text = "Let me check:\n```bash\nls -la\npytest -q\n```\nThen I will fix it."
    found = parse_tool_call(text, TOOLS)
    assert found.call is not None
    assert (found.call.name, found.call.arguments) == ("bash", {"command": "ls -la\npytest -q"})
    assert parse_tool_call(text, ("sql", "submit")).call is None
    assert parse_tool_call(text, TOOLS, fallbacks=False).call is None


def test_fenced_python_is_not_a_call():
    found = parse_tool_call("```python\nprint(1)\n```", TOOLS)
    assert (found.call, found.error) == (None, "")


def test_tagged_call_wins_over_fallbacks():
    text = "```bash\nrm -rf x\n```\n" + format_call("submit", {})
    found = parse_tool_call(text, TOOLS)
    assert found.call is not None and found.call.name == "submit"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("<tool_call>{name: bash}</tool_call>", "not JSON"),
        ("<tool_call></tool_call>", "not JSON"),
        ("<tool_call>[]</tool_call>", "empty list"),
        ('<tool_call>"bash"</tool_call>', "must be a JSON object"),
        ('<tool_call>{"arguments": {}}</tool_call>', "no 'name'"),
        ('<tool_call>{"name": "bash", "arguments": "{oops"}</tool_call>', "not JSON"),
        ('<tool_call>{"name": "bash", "arguments": [1, 2]}</tool_call>', "must be a JSON object"),
    ],
)
def test_broken_tagged_calls_say_what_is_wrong(text, problem):
    found = parse_tool_call(text, TOOLS)
    assert found.call is None
    assert problem in found.error
    assert CALL_FORMAT in found.error


@pytest.mark.parametrize("text", ["", "   ", "Hello!", "{", "}{", "<tool_call", "```bash\n```"])
def test_garbage_is_a_plain_answer(text):
    found = parse_tool_call(text, TOOLS)
    assert (found.call, found.error) == (None, "")


def test_tools_prompt_lists_schemas_and_a_concrete_example():
    tools = [
        {
            "type": "function",
            "function": {
                "name": "sql",
                "description": "Run SQL",
                "parameters": {
                    "type": "object",
                    "properties": {"query": {"type": "string"}},
                    "required": ["query"],
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "submit",
                "description": "Finish",
                "parameters": {"type": "object", "properties": {}},
            },
        },
    ]
    text = tools_prompt(tools)
    assert '"name": "sql"' in text and '"name": "submit"' in text
    example = text.split("For example:\n", 1)[1]
    found = parse_tool_call(example)
    assert found.call is not None and found.call.name == "sql"
    assert found.call.arguments == {"query": "..."}


# -- total and bounded, whatever a model writes ---------------------------------------------

DEEP = 100_000
DEEP_ARGS = '{"a":' * DEEP + "1" + "}" * DEEP


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "bash", "arguments": ' + DEEP_ARGS + "}</tool_call>",
        '<tool_call>{"name": "bash", "arguments": ' + json.dumps(DEEP_ARGS) + "}",
        "<tool_call>" + "[" * DEEP + "]" * DEEP,
        'I will run it: {"name": "bash", "arguments": ' + DEEP_ARGS + "}",
        "prose first " + "[" * DEEP,
    ],
)
def test_a_call_nested_100000_levels_deep_is_a_parse_failure(text):
    found = parse_tool_call(text, TOOLS)
    assert found.call is None
    if "{" in text:  # a call was tried: the model is told what was wrong
        assert "deeper than" in found.error and CALL_FORMAT in found.error


@pytest.mark.parametrize(
    "text",
    [
        "<tool_call>x" + " " * 200_000 + "y",
        "<tool_call>```json" + " \n" * 100_000 + "x```",
        "```bash\n" + " " * 200_000,
        '{"name": "bash", "arguments": {"a": "' + "{" * 200_000,
        '{"a": [' * 40_000,
        "<tool_call>" * 50_000,
    ],
)
def test_long_runs_parse_in_linear_time(text):
    start = time.monotonic()
    parse_tool_call(text, TOOLS)
    assert time.monotonic() - start < 2.0


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [('{"command": NaN}', "not JSON"), ('{"command": 1e999}', "not JSON")],
)
def test_non_finite_numbers_are_a_parse_failure(arguments, problem):
    text = '<tool_call>{"name": "bash", "arguments": ' + arguments + "}</tool_call>"
    found = parse_tool_call(text, TOOLS)
    assert found.call is None and problem in found.error


def test_a_tool_name_no_tool_has_is_a_parse_failure():
    found = parse_tool_call('<tool_call>{"name": "' + "b" * 500 + '", "arguments": {}}', TOOLS)
    assert found.call is None and "at most 128" in found.error


_PIECES = ["{", "}", "[", "]", '"', ":", ",", '"name"', '"arguments"', '"bash"', "NaN", "1e999"]
_PIECES += ["\\ud800", "\\", " ", "<tool_call>", "</tool_call>", "```", "```json\n", "```bash\n"]


@pytest.mark.parametrize("seed", range(4))
def test_random_text_never_raises(seed):
    rng = random.Random(seed)
    for _ in range(1000):
        text = "".join(rng.choice(_PIECES) for _ in range(rng.randrange(1, 40)))
        found = parse_tool_call(text, TOOLS)
        assert found.call is None or found.call.name
