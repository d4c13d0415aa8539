"""Each call of the TRL rollout hook samples afresh; a restarted trainer's call resumes.

A second call at one global step (TRL makes one when ``steps_per_generation`` is below
``gradient_accumulation_steps``) gets new episodes, not the stored ones back; two ranks
given halves of one task's group sample apart (their episodes' reset seeds, which key
the sampling, differ); a new hook with the same ``train_id`` (a trainer restarted after
a crash) replaying the first call resumes that call's run.
"""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace
from typing import Any

import pytest

from gym._store import Store
from gym.train import trl_rollout
from gym.train._trl import _rank

HAVE_TORCH = all(importlib.util.find_spec(m) for m in ("torch", "transformers", "llguidance"))
ENV = "boxgym/Learn-v0"


def _trainer(loaded: Any, step: int, rank: int) -> SimpleNamespace:
    """A stand-in for TRL's trainer on one DDP rank."""
    return SimpleNamespace(
        model=loaded.model,
        processing_class=loaded.tokenizer,
        state=SimpleNamespace(global_step=step),
        args=SimpleNamespace(temperature=1.0, top_p=1.0),
        accelerator=SimpleNamespace(process_index=rank, unwrap_model=lambda m: m),
    )


def test_the_rank_is_the_accelerators_else_the_args_else_0():
    accelerator = SimpleNamespace(process_index=2)
    assert _rank(SimpleNamespace(accelerator=accelerator, args=SimpleNamespace())) == 2
    assert _rank(SimpleNamespace(args=SimpleNamespace(process_index=3))) == 3
    odd = SimpleNamespace(accelerator=SimpleNamespace(process_index="x"), args=None)
    assert _rank(odd) == 0 and _rank(object()) == 0


@pytest.mark.docker
@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch, transformers and llguidance")
@pytest.mark.timeout(300)
def test_calls_at_one_step_and_ranks_sample_apart_and_a_restart_resumes(tmp_path):
    from gym._policy._tiny import build_tiny

    loaded = build_tiny(0)
    store = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    rank0 = trl_rollout(ENV, store=store, tasks=["otter"], train_id="t")
    rank1 = trl_rollout(ENV, store=store, tasks=["otter"], train_id="t")
    half = [next(iter(rank0.prompts))] * 2  # a group of 4, two on each rank

    first = rank0(half, _trainer(loaded, 7, 0))
    again = rank0(half, _trainer(loaded, 7, 0))  # a second generation batch of step 7
    other = rank1(half, _trainer(loaded, 7, 1))
    runs = [s.run_id for s in (*rank0.steps, *rank1.steps)]
    assert len(set(runs)) == 3
    assert [(s.call, s.rank) for s in (*rank0.steps, *rank1.steps)] == [(0, 0), (1, 0), (0, 1)]
    ids = [*first["boxgym_episode_id"], *again["boxgym_episode_id"], *other["boxgym_episode_id"]]
    assert len(set(ids)) == 6  # no call got another's stored episodes back
    seeds = [store.episode(e).seed for e in ids]
    assert len(set(seeds)) == 6  # every member of a group resets (and samples) apart

    # a trainer restarted from step 7 replays its calls: the first resumes its run
    restarted = trl_rollout(ENV, store=store, tasks=["otter"], train_id="t")
    replay = restarted(half, _trainer(loaded, 7, 0))
    assert restarted.steps[0].run_id == rank0.steps[0].run_id
    assert replay["boxgym_episode_id"] == first["boxgym_episode_id"]
    assert replay["completion_ids"] == first["completion_ids"]
