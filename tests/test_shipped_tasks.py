"""Every shipped task is valid: its oracle passes, noop fails, a forbidden write is flagged
and grading the oracle's final state again gives the same verdict.

This is `gym env validate --all -k 1`; the same command with `-k 3` is run before a
release (figures in docs/benchmarks.md). Benchmark-scale environments (MBPP's 974 tasks)
are validated by scripts/validate-benchmarks.sh instead, after the main suite.
"""

from __future__ import annotations

import pytest
from toy_env import ENV_ID as TOY

import gym
from gym._validate import validate_env

pytestmark = [pytest.mark.docker, pytest.mark.slow]


BENCHMARK_SCALE = {"boxgym/MBPP-v0"}
"""Validated in full by tests/environments/test_mbpp.py's benchmark test, not here."""


@pytest.mark.parametrize("env_id", [e for e in gym.env_ids() if e not in {TOY, *BENCHMARK_SCALE}])
def test_every_task_of_the_environment_is_valid(engine, env_id):
    checks = validate_env(env_id, repeats=1, concurrency=4)
    problems = {c.task_id: c.problems for c in checks if not c.ok}
    assert problems == {}
    assert checks, f"{env_id} ships no tasks"
