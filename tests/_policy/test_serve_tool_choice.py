"""The local server reads tool_choice the way vLLM does."""

from __future__ import annotations

import pytest
from policy_samples import BASH_TOOL, SUBMIT_TOOL, TOOLS

from gym._policy._serve import _BadRequest, _tool_choice


def test_required_constrains_auto_and_none_do_not():
    assert _tool_choice({"tools": TOOLS, "tool_choice": "required"}) == (TOOLS, True)
    assert _tool_choice({"tools": TOOLS, "tool_choice": "auto"}) == (TOOLS, False)
    assert _tool_choice({"tools": TOOLS}) == (TOOLS, False)
    assert _tool_choice({"tools": TOOLS, "tool_choice": "none"}) == ([], False)
    assert _tool_choice({"tool_choice": "required"}) == ([], False)  # nothing to call


def test_a_named_tool_constrains_to_that_tool():
    named = {"type": "function", "function": {"name": "submit"}}
    assert _tool_choice({"tools": TOOLS, "tool_choice": named}) == ([SUBMIT_TOOL], True)
    with pytest.raises(_BadRequest, match="'grep'"):
        _tool_choice({"tools": [BASH_TOOL], "tool_choice": {"function": {"name": "grep"}}})
    with pytest.raises(_BadRequest, match="tool_choice must be"):
        _tool_choice({"tools": TOOLS, "tool_choice": "always"})
