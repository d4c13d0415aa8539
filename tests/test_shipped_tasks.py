"""Shipped tasks are valid: the oracle passes, noop fails, a forbidden write is flagged,
grading the oracle's final state again gives the same verdict, and every policy of the
cheating panel (gym/_envs/_panel.py: a liar, constants, the visible example echoed, an empty
answer) fails.

The main suite validates a sample of each environment's tasks, a different one each day
(``GYM_SAMPLE_SEED`` picks another; the seed is in the test's id), so that over days every
task is seen and any failure can be replayed. Every task of every environment but the
benchmark-scale ones is validated by the ``shipped`` suite (scripts/validate-shipped.sh,
run by .ci/run after the test suite): that is `gym env validate --all -k 1`; the same
with ``-k 3`` runs before a release. BFCL's 200 multi-turn tasks: a fifth each day there,
all of them in five days (`ROTATED`). MBPP's 974 tasks and all of BFCL's:
scripts/validate-benchmarks.sh.
.ci/run sets ``GYM_SHIPPED_FOLLOWS=1``: the sample of an environment the shipped suite then
validates in full is skipped (about 70 s of CI's budget); MBPP's sample still runs.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import math
import os
import random
import shutil
import signal
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import pytest
from toy_env import ENV_ID as TOY

import gym
from gym._envs._panel import code_panel, trivial_sources
from gym._envs._registry import tasks_of
from gym._run._validate import panel_exemptions, select_tasks
from gym.runs import validate_env

BENCHMARK_SCALE = {"boxgym/MBPP-v0"}
"""Validated in full by tests/environments/test_mbpp.py's benchmark test, not here."""
ROTATED = {"boxgym/BFCL-MultiTurn-v0": 5}
"""Environments the shipped suite validates one share of N at a time, the share chosen
by the day (``GYM_SAMPLE_SEED``): every task within N days (BFCL's 200 multi-turn tasks
cost 4.5 minutes of CI's budget in full; a fifth, 55 s). In full: the benchmark test
below (scripts/validate-benchmarks.sh)."""
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
    if os.environ.get("GYM_SHIPPED_FOLLOWS") == "1" and env_id not in BENCHMARK_SCALE:
        pytest.skip("every task is validated by scripts/validate-shipped.sh later in this run")
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
    shares = ROTATED.get(env_id)
    if shares is None:
        assert _problems(env_id, None) == {}
        return
    tasks = todays_share(env_id, SEED, shares)
    assert _problems(env_id, tasks) == {}, f"replay: GYM_SAMPLE_SEED={SEED} pytest {__file__}"


def todays_share(env_id: str, seed: int, shares: int) -> list[str]:
    """The ids of share ``seed mod shares`` of the environment's tasks (natural id order)."""
    chosen = select_tasks(tasks_of(env_id), shard=(seed % shares + 1, shares))
    return [t.id for t in chosen]


def test_the_shares_of_consecutive_days_cover_every_task_once():
    env_id, shares = next(iter(ROTATED.items()))
    days = [todays_share(env_id, SEED + d, shares) for d in range(shares)]
    every = sorted(t.id for t in tasks_of(env_id))
    assert sorted(i for day in days for i in day) == every
    assert todays_share(env_id, SEED + shares, shares) == days[0]


@pytest.mark.docker
@pytest.mark.benchmark
@pytest.mark.timeout(4 * 3600)
@pytest.mark.parametrize("env_id", sorted(ROTATED))
def test_every_task_of_a_rotated_environment_is_valid(engine, env_id):
    """All of its tasks (scripts/validate-benchmarks.sh; BFCL's 200: about 4.5 minutes)."""
    assert _problems(env_id, None) == {}


def _passes(task: gym.Task, source: str) -> bool:
    """Whether a solution module passes a ``calls`` task's checks, run in this process
    (a fast screen: the judge's boundary is not in play for plain constant answers)."""
    grading = task.data["grading"]
    solution = types.ModuleType("solution")
    checks: dict[str, Any] = {"__name__": "boxgym_checks", "math": math}
    previous = signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError()))
    signal.alarm(20)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            exec(compile(source, "solution", "exec"), solution.__dict__)
            sys.modules["solution"] = solution
            hidden = (task.folder() / "hidden" / "checks.py").read_text()
            exec(compile(hidden, "checks", "exec"), checks)
            for name in grading["tests"]:
                checks[name](getattr(solution, grading["entry"]))
    except BaseException:  # what the judge counts as a failed check (a timeout too)
        return False
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        sys.modules.pop("solution", None)
    return True


@pytest.mark.parametrize("env_id", ["boxgym/PyFunc-v0", "boxgym/HumanEval-v0"])
def test_no_trivial_policy_of_the_panel_passes_a_calls_task(env_id):
    """Every constant, the echoed example and None fail every task's checks (the panel plays
    the liar, the echo, None, and constants where there is no example, in containers)."""
    passing = {}
    for task in tasks_of(env_id):
        exempt = panel_exemptions(task)
        for name, source in trivial_sources(task).items():
            if name not in exempt and _passes(task, source):
                passing.setdefault(task.id, []).append(name)
    assert passing == {}


def test_the_screen_sees_a_trivial_policy_pass(tmp_path):
    seeds = Path(__file__).resolve().parents[1] / "seeds" / "pyfunc"
    shutil.copytree(seeds / "digital-root", tmp_path / "weak" / "digital-root")
    (tmp_path / "weak" / "digital-root" / "hidden" / "checks.py").write_text(
        "def check_examples(candidate):\n    assert candidate(16) == 7\n\n\n"
        "def check_edges(candidate):\n    assert candidate(7) == 7\n"
    )
    (task,) = gym.load_tasks(tmp_path, "weak")
    sources = trivial_sources(task)
    assert _passes(task, (task.folder() / "oracle" / "solution.py").read_text())
    assert _passes(task, sources["echo"])  # echo returns 7: it passes
    assert not _passes(task, sources["constant_zero"])
    assert code_panel(task)["echo"][0].arguments["content"] == sources["echo"]
