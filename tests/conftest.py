"""Shared fixtures. Docker-marked tests use the real engine and fail loudly without one."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import toy_env  # noqa: F401 - registers the toy family (toy/Answer-v0) for every test

import gym
import gym.images
from gym._core._errors import EngineUnavailable
from gym._sandbox import DockerSandbox, SandboxConfig, client

if os.environ.get("PYTEST_XDIST_WORKER"):
    # xdist's workers start with COLUMNS=80 and LINES=24 set, which the CLI (and every `gym`
    # a test starts) would take as the user's width; tests that need a width set their own.
    for _name in ("COLUMNS", "LINES"):
        os.environ.pop(_name, None)

SUITES: dict[str, str] = {
    "ray": "scripts/test-ray.sh",
    "shipped": "scripts/validate-shipped.sh",
    "train": "scripts/test-train.sh",
    "benchmark": "scripts/validate-benchmarks.sh",
    "redteam": "scripts/redteam.sh",
}
"""Slower suites kept out of a plain ``pytest`` (the README's test command): each runs
as a command of its own (which .ci/run calls after the test suite), or with
``pytest -m NAME`` / ``pytest --suite NAME``."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--no-docker", action="store_true", help="skip tests that need a Docker engine"
    )
    parser.addoption(
        "--suite",
        action="append",
        default=[],
        choices=sorted(SUITES),
        help="also run this slower suite (repeatable); `-m NAME` does the same",
    )
    parser.addoption(
        "--run-benchmark",
        action="store_true",
        help="also run benchmark-scale validations (hours; scripts/validate-benchmarks.sh)",
    )
    parser.addoption(
        "--redteam",
        action="store_true",
        help="also run every red-team row as a test (scripts/redteam.sh runs them as a suite)",
    )


def _suites_on(config: pytest.Config) -> set[str]:
    """The slower suites this session asked for (by option, or named in ``-m``)."""
    on = set(config.getoption("--suite"))
    if config.getoption("--run-benchmark"):
        on.add("benchmark")
    if config.getoption("--redteam") or os.environ.get("GYM_REDTEAM") == "1":
        on.add("redteam")
    words = set(re.findall(r"\w+", config.getoption("markexpr") or ""))
    return on | (words & set(SUITES))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skips: dict[str, pytest.MarkDecorator] = {}
    if config.getoption("--no-docker"):
        skips["docker"] = pytest.mark.skip(reason="--no-docker given")
    on = _suites_on(config)
    for name, command in SUITES.items():
        if name not in on:
            skips[name] = pytest.mark.skip(reason=f"a slower suite: {command} (or -m {name})")
    for item in items:
        for keyword, skip in skips.items():
            if item.get_closest_marker(keyword) is not None:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def engine() -> None:
    try:
        client()
    except EngineUnavailable as exc:
        pytest.fail(f"{exc} (or pass --no-docker to skip container tests)")


@pytest.fixture
def owned(engine: None) -> Iterator[Any]:
    """Containers (running or not) whose owner label names process ``pid``, as a
    function of ``pid``; listed by a bare Docker client, which starts and reaps nothing."""
    import docker

    plain = docker.from_env()

    def of(pid: int) -> list[str]:
        rows = plain.api.containers(all=True, filters={"label": "boxgym.owner"})
        return [r["Id"] for r in rows if r["Labels"]["boxgym.owner"].split(":")[1] == str(pid)]

    yield of
    plain.close()


@pytest.fixture(scope="session")
def python_image(engine: None) -> str:
    return gym.images.ensure_image("python")


RUN_EPISODE = """
import faulthandler, signal, sys, time, gymnasium, gym, gym._cli
faulthandler.register(signal.SIGUSR1, all_threads=True)  # stacks for a test that times out
# Ctrl-C at a terminal: a suite started in the background (`scripts/test.sh &`, nohup) hands
# its children SIGINT ignored, as a shell does for background jobs, and Python keeps that
signal.signal(signal.SIGINT, signal.default_int_handler)
if "--cli-signals" in sys.argv:
    signal.signal(signal.SIGTERM, gym._cli._terminate)
env = gymnasium.make("boxgym/PyFunc-v0")
env.reset(seed=0)
env.step({"name": "bash", "arguments": {"command": "sleep 0"}})
print("RUNNING", flush=True)
time.sleep(600)
"""


@pytest.fixture
def episode_process(engine: None) -> Iterator[Any]:
    """Start a process with an episode's agent container running (``--cli-signals``: the
    CLI's SIGTERM handling); ``start(*args)`` returns its Popen, killed at teardown."""

    def start(*args: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-c", RUN_EPISODE, *args], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        assert "RUNNING" in proc.stdout.readline()
        procs.append(proc)
        return proc

    procs: list[subprocess.Popen[str]] = []
    yield start
    for proc in procs:
        proc.kill()
        proc.wait()
        if proc.stdout:
            proc.stdout.close()


@pytest.fixture
def small_config(python_image: str) -> SandboxConfig:
    return SandboxConfig(image=python_image, memory_mb=256, pids_limit=64)


@pytest.fixture
def sandbox(small_config: SandboxConfig) -> Iterator[DockerSandbox]:
    box = DockerSandbox.create(small_config, run="pytest")
    try:
        yield box
    finally:
        box.close()


@pytest.fixture
def kept(sandbox: DockerSandbox) -> DockerSandbox:
    """A sandbox of the python image, which runs a keeper."""
    assert sandbox.keeper is not None, "the python image runs a keeper"
    return sandbox


def _pg_bin() -> str:
    import glob

    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        pytest.fail(
            "PostgreSQL server binaries are missing: install Debian's postgresql package "
            "(scripts/test.sh does)"
        )
    return found[-1].rsplit("/", 1)[0]


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server on a unix socket, started for this test session."""
    import os
    import shutil
    import subprocess
    import tempfile
    from pathlib import Path

    bindir = _pg_bin()
    root = Path(tempfile.mkdtemp(prefix="boxgym-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    prefix: list[str] = []
    if os.geteuid() == 0:  # the server refuses to run as root
        shutil.chown(root, "postgres")
        shutil.chown(sock, "postgres")
        os.chmod(root, 0o755)
        prefix = ["runuser", "-u", "postgres", "--"]
    run = lambda *a: subprocess.run([*prefix, *a], check=True, capture_output=True)  # noqa: E731
    run(f"{bindir}/initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
    run(
        f"{bindir}/pg_ctl",
        "-D",
        str(data),
        "-w",
        "-l",
        str(root / "log"),
        "-o",
        f"-k {sock} -c listen_addresses='' -c fsync=off",
        "start",
    )
    run(f"{bindir}/createdb", "-h", str(sock), "-U", "postgres", "boxgym")
    try:
        yield f"postgresql://postgres@/boxgym?host={sock}"
    finally:
        subprocess.run(
            [*prefix, f"{bindir}/pg_ctl", "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
        )
        shutil.rmtree(root, ignore_errors=True)
