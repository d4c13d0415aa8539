"""Fixtures of the grading tests: a stand-in judge model per test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from judgestub import Reply, StubJudge


@pytest.fixture
def stub() -> Iterator[Callable[[Callable[[dict[str, Any]], Reply]], StubJudge]]:
    made: list[StubJudge] = []

    def start(answer: Callable[[dict[str, Any]], Reply]) -> StubJudge:
        made.append(StubJudge(answer))
        return made[-1]

    yield start
    for s in made:
        s.close()
