"""Rejection-sampling fine-tuning: what is kept, when a model is promoted, what is refused."""

from __future__ import annotations

import pytest

from gym._core._models import Task
from gym.errors import ConfigError, HeldOutError
from gym.train import (
    RFTConfig,
    TrainEpisode,
    TurnTokens,
    promote,
    select_episodes,
)
from gym.train._rft import rft_envs, role_tasks

TOY = "toy/Answer-v0"  # tests/toy_env.py: train task "add", eval task "greet"


def _episode(
    task: str,
    tokens: list[int],
    *,
    outcome: str = "pass",
    flags: list[str] | None = None,
    split: str = "train",
    episode_id: str = "",
) -> TrainEpisode:
    turn = TurnTokens(prompt=[1, 2], completion=tokens, logprobs=[0.0] * len(tokens))
    return TrainEpisode(
        episode_id=episode_id or f"{task}-{'-'.join(map(str, tokens))}-{outcome}",
        group=f"env/{task}",
        env_id="env",
        split=split,
        outcome=outcome,
        reward=None if outcome == "infra_error" else float(outcome == "pass"),
        flags=flags or [],
        turns=[turn],
    )


def test_only_verified_unflagged_episodes_are_kept():
    episodes = [
        _episode("a", [5]),
        _episode("a", [6], outcome="fail"),
        _episode("a", [7], flags=["edited_tests"]),
        _episode("a", [8], outcome="infra_error"),
    ]
    chosen = select_episodes(episodes, cap=5)
    assert [e.turns[0].completion for e in chosen.kept] == [[5]]
    assert (chosen.episodes, chosen.verified, chosen.duplicates, chosen.capped) == (4, 1, 0, 0)


def test_the_same_tokens_for_the_same_task_count_once():
    episodes = [
        _episode("a", [5, 6], episode_id="e1"),
        _episode("a", [5, 6], episode_id="e2"),
        _episode("b", [5, 6], episode_id="e3"),  # another task: not a duplicate
        _episode("a", [5, 7], episode_id="e4"),
    ]
    chosen = select_episodes(episodes, cap=5)
    assert sorted(e.episode_id for e in chosen.kept) == ["e1", "e3", "e4"]
    assert chosen.duplicates == 1 and chosen.verified == 4


def test_each_task_keeps_its_cap_shortest_first():
    episodes = [
        _episode("a", [1, 1, 1], episode_id="long"),
        _episode("a", [2], episode_id="short"),
        _episode("a", [3, 3], episode_id="middle"),
        _episode("b", [4, 4, 4, 4], episode_id="only"),
    ]
    chosen = select_episodes(episodes, cap=2)
    assert [e.episode_id for e in chosen.kept] == ["short", "middle", "only"]
    assert chosen.capped == 1


def test_eval_split_episodes_are_refused():
    with pytest.raises(HeldOutError, match="held-out split"):
        select_episodes([_episode("a", [1]), _episode("b", [2], split="eval")], cap=2)


@pytest.mark.parametrize(
    ("best", "candidate", "promoted"),
    [(0.25, 0.5, True), (0.5, 0.5, False), (0.5, 0.25, False), (0.0, 0.0, False)],
)
def test_a_candidate_is_promoted_only_when_held_out_pass_at_1_rises(best, candidate, promoted):
    assert promote(best, candidate) is promoted


def test_training_refuses_held_out_tasks():
    assert rft_envs(RFTConfig(envs=[TOY], tasks=["add"])) == [TOY]
    with pytest.raises(HeldOutError, match=r"held-out task.*greet \(eval\)"):
        rft_envs(RFTConfig(envs=[TOY], tasks=["add", "greet"]))


def test_rft_ids_change_with_what_is_trained():
    one = RFTConfig(envs=[TOY])
    assert one.rft_id == RFTConfig(envs=[TOY]).rft_id
    assert one.rft_id != RFTConfig(envs=[TOY], lr=1e-4).rft_id


def test_a_round_runs_the_splits_of_each_role_whatever_they_are_named():
    # the default splits are one name per role: the runner selects them (as before roles)
    assert role_tasks([TOY], "training", ["add"]) == ("train", ["add"])
    assert role_tasks([TOY], "held-out") == ("eval", None)
    # MBPP trains on two splits and holds out two: the tasks of each role, by id
    split, train = role_tasks(["boxgym/MBPP-v0", "boxgym/Learn-v0"], "training")
    assert split is None and {"MBPP/1", "MBPP/601", "otter"} <= set(train or [])
    assert not {"MBPP/11", "otter-reworded"} & set(train or [])
    split, held = role_tasks(["boxgym/MBPP-v0"], "held-out")
    assert split is None and {"MBPP/11"} <= set(held or []) and "MBPP/601" not in (held or [])
    assert role_tasks(["boxgym/MBPP-v0"], "training", ["MBPP/1", "MBPP/11"]) == (None, ["MBPP/1"])


def test_an_id_trained_in_one_environment_and_held_out_in_another_is_refused(monkeypatch):
    import gym.train._rft as rft

    tasks = {"a": [Task(id="x", family="a", prompt="p", split="prompt")]}
    tasks["b"] = [Task(id="x", family="b", prompt="p", split="test")]
    roles = {"prompt": "training", "test": "held-out"}
    monkeypatch.setattr(rft, "tasks_of", tasks.__getitem__)
    monkeypatch.setattr(rft, "split_uses", lambda env_id: {**roles, "train": "training"})
    monkeypatch.setattr(rft, "split_use", lambda env_id, split: roles[split])
    with pytest.raises(ConfigError, match=r"\['x'\] are training in one of a, b"):
        role_tasks(["a", "b"], "training")


def test_the_environment_of_an_episode_is_its_own_field_not_parsed_from_its_group():
    mbpp = TrainEpisode(
        group="boxgym/MBPP-v0/MBPP/601",
        env_id="boxgym/MBPP-v0",
        split="prompt",
        outcome="pass",
        reward=1.0,
    )
    assert select_episodes([mbpp], cap=1).kept == [mbpp]  # a training split of MBPP
    with pytest.raises(HeldOutError):
        select_episodes([mbpp.model_copy(update={"split": "test"})], cap=1)


def test_an_unknown_env_is_refused_before_the_model_is_built_or_anything_said(
    monkeypatch, tmp_path, capsys
):
    """`gym train rft boxgym/Nope-v0` exits 2 at once: no model built, no id line, no store."""
    import gym.train._rft as rft
    from gym._cli._app import run_cli

    def built(config: RFTConfig) -> None:
        raise AssertionError("the model was built before the environments were checked")

    monkeypatch.setattr(rft, "rft_policy", built)
    db = tmp_path / "runs.db"
    code = run_cli(["train", "rft", "boxgym/Nope-v0", "--db", f"sqlite:///{db}"])
    said = capsys.readouterr()
    assert code == 2, said
    assert said.err.startswith("error: no environment 'boxgym/Nope-v0'"), said.err
    assert "rft " not in said.err.splitlines()[0] and not db.exists()
    with pytest.raises(ConfigError, match="no environment 'boxgym/Nope-v0'"):
        rft.train_rft(RFTConfig(envs=["boxgym/Nope-v0"]), store=None, out=tmp_path)  # type: ignore[arg-type]
