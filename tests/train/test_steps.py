"""Step-level sampling's pure parts: signals, advantages per fork, the branching turn's mask."""

from __future__ import annotations

import importlib.util
import statistics
from typing import Any

import pytest
from typer.testing import CliRunner

from gym._cli import app
from gym._core._errors import ConfigError, HeldOutError
from gym._core._models import Task
from gym._store import StepRow
from gym.train._episodes import TrainEpisode
from gym.train._grpo import GrpoConfig
from gym.train._grpo_collect import ScoredEpisode
from gym.train._samples import TurnTokens
from gym.train._steps import (
    Branch,
    StepConfig,
    branch_signal,
    conversation_to,
    parse_branch_steps,
    step_samples,
    turn_at,
)


def _turn(n: int) -> TurnTokens:
    """Turn n: a prompt of its own ids (100 + n, repeated), a completion of 3 ids."""
    return TurnTokens(
        prompt=[100 + n] * (4 + n), completion=[10 * n + 1, 10 * n + 2, 2], logprobs=[-0.5] * 3
    )


def _scored(eid: str, reward: float | None, turns: int = 3, **extra: Any) -> ScoredEpisode:
    outcome = "infra_error" if reward is None else ("pass" if reward else "fail")
    episode = TrainEpisode(
        episode_id=eid,
        group="boxgym/LearnSteps-v0/drawers-08",
        split=extra.pop("split", "train"),
        outcome=outcome,
        reward=reward,
        flags=extra.pop("flags", []),
        turns=[_turn(n) for n in range(turns)] if reward is not None else [],
    )
    return ScoredEpisode(
        episode=episode,
        env_id="boxgym/LearnSteps-v0",
        task_id="drawers-08",
        policy_version=0,
        hidden_pass=bool(reward),
    )


def _forks() -> tuple[list[ScoredEpisode], dict[str, Branch]]:
    """A parent P forked at turn 1 (branches a, b, c) and at turn 2 (d, e: equal rewards)."""
    episodes = [
        _scored("P", 0.0),
        _scored("a", 1.0),
        _scored("b", 0.0),
        _scored("c", 0.0),
        _scored("d", 1.0),
        _scored("e", 1.0),
    ]
    branches = {
        **{
            eid: Branch(parent_id="P", fork_step=1, branch=i, turn=1) for i, eid in enumerate("abc")
        },
        **{eid: Branch(parent_id="P", fork_step=2, branch=i, turn=2) for i, eid in enumerate("de")},
    }
    return episodes, branches


def test_advantages_are_per_fork_and_only_the_branching_turn_is_a_sample():
    episodes, branches = _forks()
    built = step_samples(episodes, branches, "dr_grpo", eos_token_id=2, credit="branch")
    # the fork at turn 2 has no variance: dropped; the parent trains nothing
    assert built.advantages.groups == 2 and built.advantages.zero_variance_groups == 1
    assert [s.episode_id for s in built.samples] == ["a", "b", "c"]
    assert [s.advantage for s in built.samples] == pytest.approx([2 / 3, -1 / 3, -1 / 3])
    turn = _turn(1)
    for sample in built.samples:
        assert sample.turns == [1]
        assert sample.input_ids == turn.prompt + turn.completion
        assert sample.loss_mask == [0] * len(turn.prompt) + [1] * len(turn.completion)
        assert sample.rollout_logprobs == [0.0] * len(turn.prompt) + turn.logprobs
        assert not sample.truncated


def test_the_batch_masks_in_the_branching_turn_alone():
    if importlib.util.find_spec("torch") is None:
        pytest.skip("needs torch")
    from gym.train._batch import collate

    episodes, branches = _forks()
    built = step_samples(episodes, branches, "grpo", credit="branch")
    batch = collate(built.samples, pad_token_id=0)
    width = len(_turn(1).prompt)
    assert batch.loss_mask[:, :width].sum() == 0 and batch.loss_mask[:, width:].sum() == 9
    assert batch.advantages.tolist() == pytest.approx(
        [a for a, k in zip(built.advantages.values, built.advantages.keep, strict=True) if k]
    )


def test_the_step_reward_adds_under_its_weight_and_none_adds_nothing():
    assert branch_signal(1.0, 0.5, 0.4) == pytest.approx(1.2)
    assert branch_signal(0.0, None, 0.4) == 0.0
    assert branch_signal(None, 0.9, 0.4) is None  # infra_error: left out
    episodes = [_scored("d", 1.0), _scored("e", 1.0), _scored("f", 1.0, flags=["forbidden_tool"])]
    branches = {
        "d": Branch(parent_id="P", fork_step=2, branch=0, turn=2, step_reward=1.0),
        "e": Branch(parent_id="P", fork_step=2, branch=1, turn=2, step_reward=0.0),
        "f": Branch(parent_id="P", fork_step=2, branch=2, turn=2, step_reward=1.0),
    }
    # equal outcomes: without the weight the group teaches nothing
    assert not step_samples(episodes[:2], branches, "dr_grpo", credit="branch").samples
    assert step_samples(episodes[:2], branches, "dr_grpo", weight=0.5, credit="branch").samples
    built = step_samples(episodes, branches, "dr_grpo", weight=0.5, credit="branch")
    # signals 1.5, 1.0 and 0 (flagged: outcome 0, no step reward)
    assert [s.advantage for s in built.samples] == pytest.approx([2 / 3, 1 / 6, -5 / 6])


def test_an_infra_error_branch_is_left_out_and_eval_branches_are_refused():
    episodes = [_scored("a", 1.0), _scored("b", None), _scored("c", 0.0)]
    branches = {
        e: Branch(parent_id="P", fork_step=0, branch=i, turn=0) for i, e in enumerate("abc")
    }
    built = step_samples(episodes, branches, credit="branch")
    assert [s.episode_id for s in built.samples] == ["a", "c"]
    assert built.advantages.infra_excluded == 1
    leaked = [_scored("a", 1.0, split="eval"), _scored("c", 0.0)]
    with pytest.raises(HeldOutError, match="not of a training split"):
        step_samples(leaked, branches)


def test_a_branching_turn_outside_the_branch_is_an_error():
    episodes = [_scored("a", 1.0, turns=1), _scored("b", 0.0, turns=1)]
    branches = {e: Branch(parent_id="P", fork_step=3, branch=i, turn=3) for i, e in enumerate("ab")}
    with pytest.raises(ConfigError, match="its turn 3 to train"):
        step_samples(episodes, branches)


def test_turn_at_and_the_conversation_cut():
    def row(i: int, tokens: bool) -> StepRow:
        return StepRow(episode_id="e", index=i, completion_token_ids=[1] if tokens else None)

    steps = [row(0, True), row(1, False), row(2, True)]  # turn 0 made two parallel calls
    assert [turn_at(steps, k) for k in range(4)] == [0, 1, 1, 2]
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "look"},
        {"role": "tool", "content": "left: a card"},
        {"role": "assistant", "content": "open"},
        {"role": "tool", "content": "otter"},
    ]
    assert [m["content"] for m in conversation_to(messages, 0)] == [
        "s",
        "u",
        "look",
        "left: a card",
    ]
    assert len(conversation_to(messages, 1)) == 6


def _judge(task: Task, messages: list[dict[str, Any]], step: int) -> float | None:
    return None


def test_the_step_config_and_the_training_id():
    assert StepConfig(branch_steps=[2, 1, 2]).branch_steps == [1, 2]
    assert StepConfig().forks_at(7) and not StepConfig(branch_steps=[1]).forks_at(0)
    with pytest.raises(ValueError, match="turn indices"):
        StepConfig(branch_steps=[-1])
    with pytest.raises(ValueError):
        StepConfig(branches=1)
    # a step reward never lifts a fail (0 + w x 1) to a full pass (1 + w x 0)
    for weight in (1, 1.5):
        with pytest.raises(ValueError, match="step_reward_weight must be below 1"):
            StepConfig(step_reward=_judge, step_reward_weight=weight)
    assert branch_signal(0.0, 1.0, 0.99) < branch_signal(1.0, 0.0, 0.99)
    assert parse_branch_steps("auto") == "auto" and parse_branch_steps("1, 2") == [1, 2]
    with pytest.raises(ConfigError, match="--branch-steps"):
        parse_branch_steps("first")
    # today's runs keep their ids; step sampling and its reward are part of the id
    assert GrpoConfig(envs=["boxgym/Learn-v0"]).train_id == "40d3655c81ad9ed0"
    step = GrpoConfig(envs=["boxgym/Learn-v0"], step_sampling=StepConfig())
    judged = GrpoConfig(
        envs=["boxgym/Learn-v0"],
        step_sampling=StepConfig(step_reward=_judge, step_reward_weight=0.5),
    )
    assert len({step.train_id, judged.train_id, "40d3655c81ad9ed0"}) == 3
    assert judged.model_dump(mode="json")["step_sampling"]["step_reward"].endswith("._judge")
    # one parent per task is a step config; one episode per task is no trajectory group
    assert GrpoConfig(envs=["boxgym/Learn-v0"], group_size=1, step_sampling=StepConfig())
    with pytest.raises(ValueError, match="at least two"):
        GrpoConfig(envs=["boxgym/Learn-v0"], group_size=1)


def test_the_cli_keeps_branch_options_for_step_sampling():
    result = CliRunner().invoke(
        app, ["train", "grpo", "boxgym/LearnSteps-v0", "--branches", "3", "--steps", "1"]
    )
    assert result.exit_code != 0
    assert "--sampling step" in result.output + str(result.exception)


def test_the_watch_reads_the_branches_step_rewards_against_their_hidden_checks():
    from gym.train._grpo import _stats_of, _with_step_rewards
    from gym.train._steps import StepCollected

    episodes = [_scored("P", 0.0), _scored("a", 1.0), _scored("b", 0.0), _scored("c", 0.0)]
    rewards = {"a": 0.9, "b": 0.8, "c": None}  # c: the judge said nothing
    branches = {
        eid: Branch(parent_id="P", fork_step=1, branch=i, turn=1, step_reward=rewards[eid])
        for i, eid in enumerate("abc")
    }
    collected = StepCollected(run_id="r", episodes=episodes, branches=branches)
    stats = _with_step_rewards(_stats_of(0, collected), collected)
    assert stats.step_reward == pytest.approx(0.85)  # a and b; the parent is no branch
    assert stats.step_hidden_pass_rate == pytest.approx(0.5)
    assert stats.step_gap == pytest.approx(0.35)


def test_step_judge_needs_a_judge_and_goes_with_step_sampling(monkeypatch):
    from gym._cli._train import _step_sampling
    from gym.train._rewards import JudgeStepReward

    monkeypatch.delenv("GYM_JUDGE_BASE_URL", raising=False)
    monkeypatch.delenv("GYM_JUDGE_MODEL", raising=False)
    with pytest.raises(ConfigError, match="GYM_JUDGE_BASE_URL"):
        _step_sampling("step", None, None, step_judge=True)
    with pytest.raises(ConfigError, match="go with --sampling step"):
        _step_sampling("trajectory", None, None, step_judge=True)
    monkeypatch.setenv("GYM_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("GYM_JUDGE_MODEL", "m")
    settings = _step_sampling("step", None, 3, step_judge=True, weight=0.25)
    assert isinstance(settings["step_reward"], JudgeStepReward)
    assert settings["step_reward_weight"] == 0.25 and settings["branches"] == 3
    assert StepConfig.model_validate(settings).step_reward is settings["step_reward"]


def test_branches_per_parent_reaches_the_config_from_the_cli_and_is_a_multiple_of_k():
    from gym._cli._train import _step_sampling

    settings = _step_sampling("step", None, 2, per_parent=6)
    assert StepConfig.model_validate(settings).branches_per_parent == 6
    with pytest.raises(ConfigError, match="--branches-per-parent"):
        _step_sampling("trajectory", None, None, per_parent=6)
    result = CliRunner().invoke(
        app,
        [
            "train",
            "grpo",
            "boxgym/LearnSteps-v0",
            "--sampling",
            "step",
            "-K",
            "4",
            "--branches-per-parent",
            "6",
            "--steps",
            "1",
        ],
    )
    assert result.exit_code != 0
    assert "multiple of K" in result.output + str(result.exception)


def test_tree_credit_trains_the_parents_turns_and_the_branches_own_turns():
    # signals: P 0 | forked at turn 1: a 1, b 0, c 0 | at turn 2: d 1, e 1. V of the
    # reset (the root): 1/2; before P's turn 1: P, a to e, 1/2; before its turn 2: P, d, e,
    # 2/3; after it: P, 0. A turn's credit: (V after - V before) + (V after - the root's).
    episodes, branches = _forks()
    built = step_samples(episodes, branches, "dr_grpo", eos_token_id=2)
    got = {(s.episode_id, s.turns[0]): s.advantage for s in built.samples}
    assert got == pytest.approx(
        {
            # P's turn 0 leads to a state worth the root's: no sample
            ("P", 1): (2 / 3 - 1 / 2) + (2 / 3 - 1 / 2),
            ("P", 2): (0 - 2 / 3) + (0 - 1 / 2),
            ("a", 1): (1 - 1 / 2) + (1 - 1 / 2),  # against its fork, the parent among them
            ("a", 2): 0 + (1 - 1 / 2),  # a branch's later turn: its outcome term alone
            ("b", 1): (0 - 1 / 2) + (0 - 1 / 2),
            ("b", 2): 0 + (0 - 1 / 2),
            ("c", 1): (0 - 1 / 2) + (0 - 1 / 2),
            ("c", 2): 0 + (0 - 1 / 2),
            ("d", 2): (1 - 2 / 3) + (1 - 1 / 2),  # the equal fork at turn 2 trains now
            ("e", 2): (1 - 2 / 3) + (1 - 1 / 2),
        }
    )
    for sample in built.samples:  # one turn alone, masked in
        turn = _turn(sample.turns[0])
        assert sample.input_ids == turn.prompt + turn.completion
        assert sample.loss_mask == [0] * len(turn.prompt) + [1] * len(turn.completion)
    assert built.advantages.groups == 1 and built.advantages.zero_variance_groups == 0
    assert built.advantages.values[0] == pytest.approx(1 / 3 - 7 / 6)  # P's credits
    # grpo divides by the task's signal std (n - 1)
    scaled = step_samples(episodes, branches, "grpo")
    std = statistics.stdev([0.0, 1, 0, 0, 1, 1])
    assert sorted(s.advantage for s in scaled.samples) == pytest.approx(
        sorted(v / (std + 1e-6) for v in got.values())
    )


def _credits(episodes: list[ScoredEpisode], branches: dict[str, Branch]) -> dict[Any, float]:
    built = step_samples(episodes, branches, "dr_grpo")
    return {(s.episode_id, s.turns[0]): s.advantage for s in built.samples}


def test_tree_credit_of_parents_without_branches_and_of_a_late_fork():
    # no branch: the step term is the outcome's on turn 0, then 0 (the root: 1/2)
    got = _credits([_scored("P", 1.0), _scored("Q", 0.0)], {})
    assert got == pytest.approx(
        {
            ("P", 0): 1.0,
            ("P", 1): 0.5,
            ("P", 2): 0.5,
            ("Q", 0): -1.0,
            ("Q", 1): -0.5,
            ("Q", 2): -0.5,
        }
    )
    # P 1 forked at turn 1 only (a 0), Q 0: the root 1/3, before P's turn 1 (P, a) 1/2
    late = {"a": Branch(parent_id="P", fork_step=1, branch=0, turn=1)}
    got = _credits([_scored("P", 1.0), _scored("a", 0.0), _scored("Q", 0.0)], late)
    root = 1 / 3
    assert got[("P", 0)] == pytest.approx(2 * (1 / 2 - root))
    assert got[("P", 1)] == pytest.approx((1 - 1 / 2) + (1 - root))
    assert got[("P", 2)] == pytest.approx(0 + (1 - root))
    assert got[("a", 1)] == pytest.approx((0 - 1 / 2) + (0 - root))
    assert got[("a", 2)] == pytest.approx(0 + (0 - root))


def test_tree_credit_leaves_out_infra_errors_and_tasks_without_a_spread():
    episodes, branches = _forks()
    episodes[1] = _scored("a", None)  # infra_error: neither a sample nor a member of a state
    got = _credits(episodes, branches)
    assert "a" not in {e for e, _ in got}
    assert step_samples(episodes, branches).advantages.infra_excluded == 1
    # the root and the state before P's turn 1 are both worth 2/5 (P, b to e)
    assert ("P", 0) not in got and got[("b", 1)] == pytest.approx(2 * (0 - 2 / 5))
    assert got[("P", 1)] == pytest.approx(2 * (2 / 3 - 2 / 5))
    same = [_scored("P", 1.0), _scored("d", 1.0), _scored("e", 1.0)]
    flat = step_samples(same, {k: branches[k] for k in "de"}, "grpo")
    assert not flat.samples and flat.advantages.zero_variance_groups == 1


def test_step_credit_is_part_of_the_training_id_and_branch_keeps_the_old_one():
    def config(**step: Any) -> GrpoConfig:
        return GrpoConfig(envs=["boxgym/Learn-v0"], step_sampling=StepConfig(**step))

    assert config().step_sampling.credit == "tree"  # type: ignore[union-attr]
    before = config(credit="branch").model_dump(mode="json")
    del before["step_sampling"]["credit"]  # what a config serialized before the field held
    assert GrpoConfig.model_validate(before).step_sampling.credit == "tree"  # type: ignore[union-attr]
    assert config(credit="branch").train_id != config().train_id


def test_credit_reaches_the_config_from_the_cli_and_goes_with_step_sampling():
    from gym._cli._train import _step_sampling

    assert StepConfig.model_validate(_step_sampling("step", None, 2, credit="branch")).credit == (
        "branch"
    )
    assert StepConfig.model_validate(_step_sampling("step", None, 2)).credit == "tree"
    with pytest.raises(ConfigError, match="--credit"):
        _step_sampling("trajectory", None, None, credit="tree")
    bad = ["train", "grpo", "boxgym/LearnSteps-v0", "--sampling", "step", "--credit", "leaf"]
    result = CliRunner().invoke(app, [*bad, "--steps", "1"])
    assert result.exit_code == 2 and "'leaf' is not one of tree, branch" in result.output
