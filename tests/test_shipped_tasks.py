"""Shipped tasks are valid: the oracle passes, noop fails, a forbidden write is flagged and
grading the oracle's final state again gives the same verdict.

The main suite validates a sample of each environment's tasks, a different one each day
(``GYM_SAMPLE_SEED`` picks another; the seed is in the test's id), so that over days every
task is seen and any failure can be replayed. Every task of every environment but the
benchmark-scale ones is validated by the ``shipped`` suite (scripts/validate-shipped.sh,
run by .ci/run after the test suite): that is `gym env validate --all -k 1`; the same
with ``-k 3`` runs before a release. MBPP's 974 tasks: scripts/validate-benchmarks.sh.
"""

from __future__ import annotations

import datetime
import os
import random

import pytest
from toy_env import ENV_ID as TOY

import gym
from gym._registry import tasks_of
from gym.runs import validate_env

BENCHMARK_SCALE = {"boxgym/MBPP-v0"}
"""Validated in full by tests/environments/test_mbpp.py's benchmark test, not here."""
SAMPLE = 3
"""Tasks per environment in the main suite's sample."""
SEED = int(os.environ.get("GYM_SAMPLE_SEED") or datetime.date.today().toordinal())
SHIPPED = [e for e in gym.env_ids() if e != TOY]


def sample_of(env_id: str, seed: int, size: int = SAMPLE) -> list[str]:
    """``size`` task ids of the environment, drawn with ``seed`` (all when it has fewer)."""
    ids = sorted(t.id for t in tasks_of(env_id))
    return sorted(random.Random(f"{seed}:{env_id}").sample(ids, min(size, len(ids))))


def _problems(env_id: str, tasks: list[str] | None) -> dict[str, list[str]]:
    checks = validate_env(env_id, repeats=1, tasks=tasks, concurrency=4)
    assert checks, f"{env_id} ships no tasks"
    return {c.task_id: c.problems for c in checks if not c.ok}


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("seed", [SEED])
@pytest.mark.parametrize("env_id", SHIPPED)
def test_a_daily_sample_of_the_environments_tasks_is_valid(engine, env_id, seed):
    tasks = sample_of(env_id, seed)
    assert _problems(env_id, tasks) == {}, f"replay: GYM_SAMPLE_SEED={seed} pytest {__file__}"


def test_the_sample_changes_with_the_seed_and_stays_within_the_tasks():
    env_id = "boxgym/HumanEval-v0"
    ids = {t.id for t in tasks_of(env_id)}
    first, again, other = sample_of(env_id, 1), sample_of(env_id, 1), sample_of(env_id, 2)
    assert first == again and first != other
    assert len(first) == SAMPLE and set(first) <= ids


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.shipped
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("env_id", [e for e in SHIPPED if e not in BENCHMARK_SCALE])
def test_every_task_of_the_environment_is_valid(engine, env_id):
    assert _problems(env_id, None) == {}
