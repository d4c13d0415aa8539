"""`gym train grpo --sampling step` on real containers: forks stored with their lineage,
advantages per fork, only each branch's branching turn trained, held-out tasks refused.

One short step (two tasks, two parents each, two branches per fork): whether step-level
sampling learns LearnSteps faster is bench/step_sampling.py's question (minutes to hours).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import gym.authoring
from gym._cli import app
from gym._core._errors import HeldOutError
from gym._core._models import Task
from gym._store import Store
from gym.train._grpo import GrpoConfig, train_grpo
from gym.train._grpo_collect import read_collected
from gym.train._steps import StepConfig, read_step_collected, step_samples

HAVE = all(importlib.util.find_spec(m) for m in ("torch", "transformers", "llguidance"))
pytestmark = [
    pytest.mark.skipif(not HAVE, reason="needs torch, transformers and llguidance"),
    pytest.mark.docker,
]
ENV = "boxgym/LearnSteps-v0"


@pytest.mark.train
@pytest.mark.timeout(300)  # about 40 s measured on the loaded 2-core machine
def test_step_sampling_forks_stores_lineage_and_trains_the_branching_turns(tmp_path: Path):
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    args = ["train", "grpo", ENV, "--sampling", "step", "--branches", "2", "-G", "2"]
    args += ["--tasks", "drawers-08", "--tasks", "drawers-07", "--steps", "1", "--seed", "1"]
    result = CliRunner().invoke(app, [*args, "--db", db, "--out", str(tmp_path / "ckpt"), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout[result.stdout.index("{") :])
    store = Store(db)
    run_id = summary["runs"][0]
    rows = {e.id: e for e in store.episodes(run_id)}
    parents = [e for e in rows.values() if store.lineage(e.id) is None]
    assert len(parents) == 4 and {e.split for e in rows.values()} == {"train"}
    # every turn of every parent was forked (auto) into two branches, each its own episode
    for parent in parents:
        lines = store.branches(parent.id)
        assert [(r.fork_step, r.branch) for r in lines] == [
            (s, b) for s in range(parent.n_steps) for b in range(2)
        ]
        prefix = [(s.tool, s.arguments) for s in store.steps(parent.id)]
        for line in lines:
            branch = rows[line.episode_id]
            own = [(s.tool, s.arguments) for s in store.steps(branch.id)]
            assert own[: line.fork_step] == prefix[: line.fork_step]  # the shared prefix
            assert branch.task_id == parent.task_id and branch.outcome in ("pass", "fail")
    assert summary["mean_reward"][0] == pytest.approx(
        sum(e.reward or 0 for e in parents) / len(parents)  # the monitor reads the parents
    )
    # the update's samples: one per branch of a fork with variance, its branching turn only
    collected = read_step_collected(store, run_id)
    built = step_samples(collected.episodes, collected.branches, credit="branch")
    by_group: dict[tuple[str, int], list[float]] = {}
    for sample in built.samples:
        branch = collected.branches[sample.episode_id]
        turn = next(e for e in collected.episodes if e.episode.episode_id == sample.episode_id)
        tokens = turn.episode.turns[branch.turn]
        assert sample.turns == [branch.turn] and sample.loss_mask.count(1) == len(tokens.completion)
        assert sample.input_ids == tokens.prompt + tokens.completion
        by_group.setdefault(branch.group, []).append(sample.advantage)
    for values in by_group.values():  # grpo within each fork: +a and -a
        assert len(values) == 2 and sum(values) == pytest.approx(0, abs=1e-6)
    # tree credit (the default): any turn of a parent or a branch's own, its tokens alone
    scored = {e.episode.episode_id: e for e in collected.episodes}
    for sample in step_samples(collected.episodes, collected.branches).samples:
        (turn,) = sample.turns
        line = collected.branches.get(sample.episode_id)
        assert line is None or turn >= line.turn  # a branch's prefix trains in its parent
        tokens = scored[sample.episode_id].episode.turns[turn]
        assert sample.input_ids == tokens.prompt + tokens.completion
    # a dense step reward sees the task and the conversation through the branching turn
    calls: list[tuple[str, int, int, str]] = []

    def judge(task: Task, messages: list[dict[str, Any]], turn: int) -> float | None:
        roles = [m["role"] for m in messages]
        calls.append((task.id, turn, roles.count("assistant"), roles[-1]))
        return 0.5 if turn == 0 else None

    judged = read_step_collected(store, run_id, step=StepConfig(step_reward=judge))
    graded = {e.episode.episode_id for e in judged.graded}
    assert len(calls) == len(graded & set(judged.branches))
    assert all(n == turn + 1 and last != "assistant" for _, turn, n, last in calls)
    for eid, branch in judged.branches.items():
        expected = (0.5 if branch.turn == 0 else None) if eid in graded else None
        assert branch.step_reward == expected
    info = json.loads((tmp_path / "ckpt" / "checkpoint.json").read_text())
    assert set(info["episodes"]) == {
        e.episode.episode_id for e in read_collected(store, run_id).graded
    }


def test_step_sampling_refuses_held_out_tasks_before_running_anything(tmp_path: Path):
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    args = ["train", "grpo", ENV, "--sampling", "step", "--tasks", "drawers-02-reworded"]
    result = CliRunner().invoke(app, [*args, "--db", db, "--out", str(tmp_path / "ckpt")])
    assert result.exit_code != 0
    assert isinstance(result.exception, HeldOutError) or "held-out" in result.output
    assert not (tmp_path / "ckpt").exists()


def _forks(turns: int, k: int, budget: int) -> list[tuple[int, int]]:
    """(fork step, branch) of a parent of ``turns`` one-call turns under a branch budget."""
    out: list[tuple[int, int]] = []
    for turn in range(turns):
        n = budget if turn == turns - 1 else min(k, budget)
        out += [(turn, b) for b in range(n)]
        budget -= n
    return out


@pytest.mark.train
@pytest.mark.timeout(300)  # about 11 s measured on the loaded 2-core machine
def test_branches_per_parent_makes_as_many_episodes_whatever_the_parents_take(tmp_path: Path):
    store = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    step = StepConfig(branches=2, branches_per_parent=4)
    config = GrpoConfig(
        envs=[ENV],
        tasks=["drawers-08", "drawers-07"],
        group_size=2,
        steps=1,
        seed=2,
        step_sampling=step,
    )
    result = train_grpo(config, store=store, out=tmp_path / "ckpt")
    row = result.steps[0]
    assert row.episodes == 2 * 2 * (1 + 4)  # tasks x parents x (the parent + its 4 branches)
    parents = [e for e in store.episodes(row.run_id) if store.lineage(e.id) is None]
    assert len(parents) == 4
    for parent in parents:  # K before each turn, and every branch left before the last one
        lines = store.branches(parent.id)
        assert [(r.fork_step, r.branch) for r in lines] == _forks(parent.n_steps, 2, 4)
    sizes = Counter(b.group for b in read_step_collected(store, row.run_id).branches.values())
    assert sum(sizes.values()) == 16 and set(sizes.values()) <= {2, 4}
    with pytest.raises(ValueError, match="multiple of K"):
        StepConfig(branches=4, branches_per_parent=6)


def test_the_bench_defaults_to_learnlock_and_its_tasks_are_each_envs_train_tasks():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    try:
        import step_sampling
    finally:
        sys.path.pop(0)
    assert step_sampling.ENV == "boxgym/LearnLock-v0"
    assert set(step_sampling.TASKS) == {"boxgym/LearnLock-v0", ENV}
    for env_id, tasks in step_sampling.TASKS.items():
        splits = {t.id: t.split for t in gym.authoring.env_class(env_id).load_tasks()}
        assert {splits.get(t) for t in tasks.split(",")} == {"train"}, env_id
