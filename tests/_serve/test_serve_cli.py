"""`gym serve` on the command line: the wrong id or a taken port is one line, exit 2."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

GYM = os.path.join(os.path.dirname(sys.executable), "gym")


def serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([GYM, "serve", *args], capture_output=True, text=True, timeout=120)


def test_an_unknown_environment_is_named_with_suggestions():
    done = serve("boxgym/PyFun-v0", "--port", "0")
    assert done.returncode == 2 and done.stdout == ""
    assert "boxgym/PyFunc-v0" in done.stderr and "Traceback" not in done.stderr


def test_a_taken_port_says_to_pick_another():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = serve("boxgym/PyFunc-v0", "--port", str(port))
    assert done.returncode == 2 and done.stdout == ""
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr and "--port" in done.stderr


WITHOUT_OPENENV = """
import sys
sys.modules["openenv"] = None  # as if openenv-core were not installed
import gym.serve
try:
    gym.serve.ToolAction
except gym.ConfigError as exc:
    print("front door:", exc)
sys.argv = ["gym", "serve", "boxgym/PyFunc-v0", "--port", "0"]
import gym._cli
gym._cli.main()
"""


def test_without_openenv_core_the_command_says_what_to_install():
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_OPENENV], capture_output=True, text=True, timeout=120
    )
    assert "front door: gym.serve.ToolAction needs openenv-core" in done.stdout
    assert done.returncode == 2
    assert "pip install 'boxgym[openenv]'" in done.stderr and "Traceback" not in done.stderr
