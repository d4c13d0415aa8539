"""Held-out episodes never become training data, at every entry that starts or reads them.

Each entry asks `split_use` about the episode's own environment and split (which fails
closed), not a split name spelled one way: MBPP's ``test`` and a Learn split spelled
`` eval`` are refused like ``eval``; training splits still pass.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from gym._store import EpisodeRow, RunRow, StepRow, Store, VerdictRow
from gym.errors import HeldOutError
from gym.train import TrainEpisode, TurnTokens, grpo_samples, select_episodes
from gym.train._grpo_collect import ScoredEpisode, collect, read_collected
from gym.train._steps import StepConfig, collect_steps, step_samples

MBPP, LEARN = "boxgym/MBPP-v0", "boxgym/Learn-v0"

HELD = [(MBPP, "MBPP/11", "test"), (LEARN, "otter", " eval"), (LEARN, "otter", "")]
"""(environment, task, a held-out split): MBPP's declared one, and two no family declares."""
TRAINING = [(MBPP, "MBPP/601", "train"), (MBPP, "MBPP/1", "prompt"), (LEARN, "otter", "train")]
"""(environment, task, a training split): MBPP trains on two splits."""


def _episodes(env_id: str, task: str, split: str) -> list[TrainEpisode]:
    """A passing and a failing episode of one task (a group with reward variance)."""
    turn = TurnTokens(prompt=[1, 2], completion=[3, 4], logprobs=[-1.0, -1.0])
    return [
        TrainEpisode(
            episode_id=f"{outcome}-{split.strip() or 'none'}",
            group=f"{env_id}/{task}",
            env_id=env_id,
            split=split,
            outcome=outcome,
            reward=float(outcome == "pass"),
            turns=[turn],
        )
        for outcome in ("pass", "fail")
    ]


def _scored(episodes: list[TrainEpisode], env_id: str, task: str) -> list[ScoredEpisode]:
    return [
        ScoredEpisode(
            episode=e, env_id=env_id, task_id=task, policy_version=0, hidden_pass=e.reward == 1.0
        )
        for e in episodes
    ]


def _stored(tmp_path: Any, env_id: str, task: str, split: str) -> tuple[Store, str]:
    """A store holding one run of a passing episode of the task, in the split given."""
    store, now = Store(f"sqlite:///{tmp_path / 'runs.db'}"), time.time()
    store.ensure_run(
        RunRow(id="r1", created_at=now, updated_at=now, config={}, policy="x", boxgym_version="0")
    )
    row = EpisodeRow(
        id="e1",
        run_id="r1",
        env_id=env_id,
        env_version=0,
        task_id=task,
        split=split,
        sample_index=0,
        seed=1,
        policy="x",
        outcome="pass",
        reward=1.0,
        messages=[],
    )
    step = StepRow(
        episode_id="e1",
        index=0,
        tool="submit",
        arguments={},
        observation="",
        prompt_token_ids=[1, 2],
        completion_token_ids=[3],
        logprobs=[-0.1],
    )
    verdict = VerdictRow(episode_id="e1", created_at=now, outcome="pass", reward=1.0)
    store.commit_episode(row, [step], verdict)
    return store, "r1"


@pytest.mark.parametrize(("env_id", "task", "split"), HELD)
def test_held_out_episodes_are_refused_by_every_sampler(env_id, task, split):
    episodes = _episodes(env_id, task, split)
    with pytest.raises(HeldOutError, match="not of a training split"):
        grpo_samples(episodes)
    with pytest.raises(HeldOutError, match=repr(split)):
        step_samples(_scored(episodes, env_id, task), {}, credit="tree")
    with pytest.raises(HeldOutError):
        select_episodes(episodes, cap=2)


@pytest.mark.parametrize(("env_id", "task", "split"), TRAINING)
def test_training_split_episodes_still_pass(env_id, task, split):
    episodes = _episodes(env_id, task, split)
    assert len(grpo_samples(episodes).samples) == 2
    assert len(step_samples(_scored(episodes, env_id, task), {}, credit="tree").samples) == 2
    assert [e.episode_id for e in select_episodes(episodes, cap=2).kept] == [f"pass-{split}"]


def test_an_episode_that_names_no_environment_is_refused():
    episodes = [e.model_copy(update={"env_id": ""}) for e in _episodes(LEARN, "otter", "train")]
    with pytest.raises(HeldOutError, match="no env_id"):
        grpo_samples(episodes)


def test_a_scored_episode_carries_its_environment_and_refuses_another():
    bare = TrainEpisode(group="g", outcome="pass", reward=1.0)
    scored = ScoredEpisode(episode=bare, env_id=LEARN, task_id="t", policy_version=0, hidden_pass=1)
    assert scored.episode.env_id == LEARN
    with pytest.raises(ValueError, match="not boxgym/MBPP-v0"):
        ScoredEpisode(
            episode=scored.episode, env_id=MBPP, task_id="t", policy_version=0, hidden_pass=1
        )


@pytest.mark.parametrize(("env_id", "task", "split"), HELD[:2])
def test_reading_back_a_collection_with_a_held_out_episode_is_refused(
    tmp_path, env_id, task, split
):
    store, run_id = _stored(tmp_path, env_id, task, split)
    with pytest.raises(HeldOutError, match="e1"):
        read_collected(store, run_id)


def test_reading_back_a_training_collection_still_works(tmp_path):
    store, run_id = _stored(tmp_path, MBPP, "MBPP/601", "train")
    (scored,) = read_collected(store, run_id).episodes
    assert scored.episode.env_id == MBPP and scored.episode.turns[0].completion == [3]


@pytest.mark.parametrize(("env_id", "task"), [(MBPP, "MBPP/11"), (LEARN, "otter-reworded")])
def test_collecting_refuses_a_held_out_task_before_running_anything(tmp_path, env_id, task):
    store = Store(f"sqlite:///{tmp_path / 'runs.db'}")

    def no_policy() -> Any:
        raise AssertionError("nothing may run")

    what: dict[str, Any] = {
        "envs": [env_id],
        "tasks": [task],
        "group_size": 2,
        "seed": 0,
        "version": 0,
        "policy": "script",
        "policy_params": {},
        "policy_factory": no_policy,
    }
    with pytest.raises(HeldOutError, match=task):
        collect(store, **what)
    with pytest.raises(HeldOutError, match=task):
        collect_steps(store, step=StepConfig(), **what)
    assert store.runs() == []
