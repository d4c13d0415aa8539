"""OpenAIPolicy against real OpenAI-compatible server processes serving the local model.

Two servers, both offline on localhost: ``transformers serve`` (transformers' own, on the
cached safetensors copy) and boxgym's ``python -m gym._policy._serve`` (vLLM-shaped:
native tool calls, logprobs, token ids).
"""

from __future__ import annotations

import importlib.util
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from policy_samples import BASH_TOOL

import gym
from gym._policy._local import ensure_local_model

NEEDS = ("torch", "transformers", "gguf", "fastapi", "uvicorn")
MISSING = [m for m in NEEDS if importlib.util.find_spec(m) is None]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        bool(MISSING),
        reason=f"the local extra is not installed ({', '.join(MISSING)} missing): "
        "pip install -e '.[local]'",
    ),
]

TOOLS = [BASH_TOOL]
MESSAGES = [
    {"role": "system", "content": "You are an agent in a Linux container."},
    {"role": "user", "content": "List the files in the workspace."},
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(proc: subprocess.Popen[str], url: str, timeout: float = 240.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            pytest.fail(f"the server exited with {proc.returncode}:\n{out[-3000:]}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"the server did not answer {url} within {timeout:.0f} s")


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=15)
    if proc.stdout:
        proc.stdout.close()


@pytest.fixture(scope="module")
def model_path() -> Path:
    return ensure_local_model()  # the cached safetensors copy (converted on first use)


@pytest.fixture(scope="module")
def transformers_serve(model_path: Path) -> Iterator[str]:
    port = _free_port()
    exe = Path(sys.executable).parent / "transformers"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cmd = [str(exe), "serve", str(model_path), "--port", str(port), "--device", "cpu"]
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        _wait_healthy(proc, f"http://127.0.0.1:{port}/health")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def boxgym_serve(model_path: Path) -> Iterator[str]:
    cmd = [
        sys.executable,
        "-m",
        "gym._policy._serve",
        "--model",
        str(model_path),
        "--port",
        "0",
        "--served-model-name",
        "smol",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        url = ""
        deadline = time.monotonic() + 240
        while not url and time.monotonic() < deadline and proc.poll() is None:
            line = proc.stdout.readline()
            if m := re.search(r"serving \S+ on (http://\S+/v1)", line):
                url = m.group(1)
        assert url, f"the server did not start (exit code {proc.poll()})"
        _wait_healthy(proc, url.removesuffix("/v1") + "/health", timeout=30)
        yield url
    finally:
        _stop(proc)


def test_openai_policy_against_transformers_serve(transformers_serve, model_path):
    policy = gym.OpenAIPolicy(
        str(model_path), base_url=transformers_serve, max_tokens=12, timeout=300
    )
    turn = policy.act(MESSAGES, TOOLS)
    assert turn.message["role"] == "assistant"
    assert isinstance(turn.message["content"], str) and turn.message["content"]
    assert 1 <= turn.usage["completion_tokens"] <= 12
    # transformers 5.24 refuses return_token_ids (422): dropped once, then never sent
    assert turn.retries == len(policy._dropped) <= 1
    assert policy._dropped <= {"return_token_ids"}
    assert policy.act(MESSAGES, TOOLS).retries == 0
    policy.close()


def test_openai_policy_against_boxgym_serve_has_token_in_token_out(boxgym_serve):
    policy = gym.OpenAIPolicy("smol", base_url=boxgym_serve, max_tokens=8, timeout=300)
    turn = policy.act(MESSAGES, TOOLS)
    assert turn.retries == 0
    assert turn.prompt_token_ids and len(turn.prompt_token_ids) == turn.usage["prompt_tokens"]
    assert turn.completion_token_ids and 1 <= len(turn.completion_token_ids) <= 8
    assert turn.logprobs and len(turn.logprobs) == len(turn.completion_token_ids)
    assert all(v <= 0 for v in turn.logprobs)
    # the same conversation in process gives the same greedy tokens
    local = gym.LocalPolicy(str(ensure_local_model()), max_new_tokens=8).act(MESSAGES, TOOLS)
    assert local.completion_token_ids == turn.completion_token_ids
    assert local.prompt_token_ids == turn.prompt_token_ids
    policy.close()


def test_boxgym_serve_errors(boxgym_serve):
    with pytest.raises(gym.PolicyError, match="HTTP 404.*does not exist"):
        gym.OpenAIPolicy("other-model", base_url=boxgym_serve).act(MESSAGES, TOOLS)
    health = httpx.get(boxgym_serve.removesuffix("/v1") + "/v1/models").json()
    assert health["data"][0]["id"] == "smol"
