"""Tool schemas and a short conversation shared by the policy tests."""

from __future__ import annotations

from typing import Any

BASH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a bash command.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
}
SUBMIT_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "submit",
        "description": "Submit.",
        "parameters": {"type": "object", "properties": {}},
    },
}
TOOLS = [BASH_TOOL, SUBMIT_TOOL]
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are an agent."},
    {"role": "user", "content": "List the files."},
]
