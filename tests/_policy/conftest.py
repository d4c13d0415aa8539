"""Fixtures of the policy tests: a scripted OpenAI-compatible server on localhost."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from stub_server import StubServer


@pytest.fixture
def stub() -> Iterator[StubServer]:
    server = StubServer()
    server.thread.start()
    try:
        yield server
    finally:
        server.close()
