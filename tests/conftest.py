"""Shared fixtures. Docker-marked tests use the real engine and fail loudly without one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import gym
from gym._errors import EngineUnavailable
from gym._sandbox import Sandbox, SandboxConfig, client


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--no-docker", action="store_true", help="skip tests that need a Docker engine"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("--no-docker"):
        return
    skip = pytest.mark.skip(reason="--no-docker given")
    for item in items:
        if "docker" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def engine() -> None:
    try:
        client()
    except EngineUnavailable as exc:
        pytest.fail(f"{exc} (or pass --no-docker to skip container tests)")


@pytest.fixture(scope="session")
def python_image(engine: None) -> str:
    return gym.ensure_image("python")


@pytest.fixture
def small_config(python_image: str) -> SandboxConfig:
    return SandboxConfig(image=python_image, memory_mb=256, pids_limit=64)


@pytest.fixture
def sandbox(small_config: SandboxConfig) -> Iterator[Sandbox]:
    box = Sandbox.create(small_config, run="pytest")
    try:
        yield box
    finally:
        box.close()
