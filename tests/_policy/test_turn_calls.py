"""Every tool call of an assistant message: `Turn.calls`, and the text parser's `calls`."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from gym import ToolCall
from gym._policy._base import Turn
from gym._policy._parse import format_call, parse_tool_call

LS = ToolCall(name="bash", arguments={"command": "ls"})
SUBMIT = ToolCall(name="submit")


def test_call_and_calls_agree_whichever_is_given():
    assert Turn(message={}, call=LS).calls == [LS]
    assert Turn(message={}, calls=[LS, SUBMIT]).call == LS
    assert Turn(message={}).calls == [] and Turn(message={}).call is None
    stored = Turn(message={}, calls=[LS, SUBMIT]).model_dump()
    assert Turn.model_validate(stored).calls == [LS, SUBMIT]
    with pytest.raises(ValidationError, match="first of its calls"):
        Turn(message={}, call=SUBMIT, calls=[LS, SUBMIT])


def test_every_tagged_block_is_a_call_in_order():
    text = (
        "Two steps.\n" + format_call("bash", {"command": "ls"}) + "\n" + format_call("submit", {})
    )
    found = parse_tool_call(text)
    assert [c.name for c in found.calls] == ["bash", "submit"] and found.call == found.calls[0]
    assert found.error == "" and found.found == 2


def test_a_block_holding_a_list_gives_each_call():
    body = json.dumps([{"name": "bash", "arguments": {"command": "ls"}}, {"name": "submit"}])
    found = parse_tool_call(f"<tool_call>{body}</tool_call>")
    assert [c.name for c in found.calls] == ["bash", "submit"]


def test_calls_stop_at_the_first_that_cannot_be_read():
    body = json.dumps(
        [{"name": "bash", "arguments": {"command": "ls"}}, {"arguments": {}}, LS.model_dump()]
    )
    found = parse_tool_call(f"<tool_call>{body}</tool_call>")
    assert [c.name for c in found.calls] == ["bash"] and found.error == ""
    first_bad = parse_tool_call(f"<tool_call>{json.dumps([{'arguments': {}}])}</tool_call>")
    assert first_bad.calls == () and first_bad.call is None and "no 'name'" in first_bad.error


def test_a_fallback_reads_one_call():
    found = parse_tool_call('{"name": "bash", "arguments": {}} {"name": "submit", "arguments": {}}')
    assert [c.name for c in found.calls] == ["bash"] and found.found == 2
