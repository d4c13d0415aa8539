"""Tool arguments of any Unicode: refused with an error observation, or written exactly.

Run at the env level on a real container: a lone surrogate anywhere, or a NUL in a path
or a command, gives an error the model can read (never an exception out of
``env.step``, never a silently cut path); NUL and control characters in file content
are written byte for byte.
"""

from __future__ import annotations

import base64
import json

import gymnasium
import pytest

pytestmark = pytest.mark.docker

TASK = "wordstats-top-n"


@pytest.fixture(scope="module")
def env():
    env = gymnasium.make("boxgym/PyRepo-v0")
    env.reset(options={"task": TASK})
    yield env
    env.close()


def step(env, name: str, **arguments):
    obs, reward, terminated, truncated, info = env.step({"name": name, "arguments": arguments})
    assert not terminated and not truncated and reward == 0.0
    return obs, info


def shell_bytes(env, command: str) -> bytes:
    """The standard output of a command, exactly (sent back base64-encoded)."""
    obs, _ = step(env, "bash", command=f"{{ {command} ; }} | base64 -w0")
    return base64.b64decode(obs.rpartition("[exit code:")[0].strip())


@pytest.mark.parametrize(
    ("name", "arguments", "where"),
    [
        ("write_file", {"path": "a.txt", "content": "x\ud800y"}, "'content'"),
        ("write_file", {"path": "b\udfff.txt", "content": "x"}, "'path'"),
        ("bash", {"command": "echo \ud83d"}, "'command'"),
        ("read_file", {"path": "\udc80"}, "'path'"),
    ],
)
def test_a_lone_surrogate_is_refused_with_an_error_observation(env, name, arguments, where):
    obs, info = step(env, name, **arguments)
    assert obs.startswith("Error:") and "surrogate" in obs and where in obs
    assert "error" in info
    obs, _ = step(env, "bash", command="ls a.txt b*.txt 2>&1; true")
    assert "No such file" in obs


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("write_file", {"path": "evil\x00.txt", "content": "x"}),
        ("bash", {"command": "echo hi\x00; touch cut.txt"}),
        ("read_file", {"path": "wordstats/core.py\x00.bak"}),
    ],
)
def test_a_nul_in_a_path_or_command_is_refused(env, name, arguments):
    obs, _ = step(env, name, **arguments)
    assert obs.startswith("Error:") and "nul" in obs.lower()
    assert shell_bytes(env, "find . -maxdepth 2 -name 'evil*' -o -name cut.txt") == b""


@pytest.mark.parametrize(
    "content",
    [
        "nul\x00in\x00the\x00middle",
        "".join(chr(c) for c in range(32)) + "\x7f",
        "crlf\r\nlf\ncr\r",
        "emoji \U0001f600 and é and \u2028 line separator",
        "",
    ],
)
def test_file_content_is_written_byte_for_byte(env, content):
    obs, _ = step(env, "write_file", path="notes/exact.bin", content=content)
    assert obs == f"Wrote {len(content.encode())} bytes to notes/exact.bin"
    assert shell_bytes(env, "cat notes/exact.bin") == content.encode()


def test_an_odd_but_valid_path_is_written_where_it_says(env):
    path = "notes/sp ace\tand\nnewline é.txt"
    obs, _ = step(env, "write_file", path=path, content="ok")
    assert obs == f"Wrote 2 bytes to {path}"
    names = shell_bytes(env, "find notes -maxdepth 1 -type f -printf '%f\\0'").split(b"\0")
    assert path.split("/")[1].encode() in names


def _nested(depth: int) -> str:
    return '{"a":' * depth + '"x"' + "}" * depth


@pytest.mark.parametrize(
    ("action", "problem"),
    [
        ({"name": "write_file", "arguments": _nested(100_000)}, "deeper than"),
        ({"name": "bash", "arguments": '{"command": "ls", "n": NaN}'}, "not JSON"),
        ({"name": "bash", "arguments": '{"command": "ls", "n": 1e999}'}, "not JSON"),
        ({"name": "bash", "arguments": '{"command": "' + "x" * (9 << 20) + '"}'}, "characters"),
        ({"name": "b" * 10_000, "arguments": {}}, "at most 128"),
        ('{"name": "bash", "arguments": ' + _nested(100_000) + "}", "deeper than"),
    ],
    ids=["deep", "nan", "overflow", "huge", "long-name", "deep-text"],
)
def test_arguments_out_of_bounds_are_an_error_observation(env, action, problem):
    obs, reward, terminated, truncated, info = env.step(action)
    assert obs.startswith("Error:") and problem in obs and len(obs) < 2000
    assert (reward, terminated, truncated) == (0.0, False, False) and "error" in info
    record = env.unwrapped.trace[-1]
    assert record.call is None and len(json.dumps(record.raw_action)) < 200_000
    assert step(env, "bash", command="echo still here")[0].startswith("still here")
