"""Fixtures of the grading tests: a stand-in judge model per test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from judgestub import Reply, StubJudge


@pytest.fixture
def stub() -> Iterator[Callable[..., StubJudge]]:
    made: list[StubJudge] = []

    def start(answer: Callable[[dict[str, Any]], Reply], signed: bool = True) -> StubJudge:
        made.append(StubJudge(answer, signed=signed))
        return made[-1]

    yield start
    for s in made:
        s.close()
