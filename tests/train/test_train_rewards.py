"""Rewards and group-relative advantages: golden values from an independent numpy version."""

from __future__ import annotations

import numpy as np
import pytest

import gym
from gym.train import advantages, group_advantages, training_reward, verified


def numpy_advantages(rewards: list[float], kind: str, eps: float = 1e-6) -> np.ndarray:
    r = np.asarray(rewards, dtype=np.float64)
    if kind == "grpo":
        return (r - r.mean()) / (r.std(ddof=1) + eps)
    if kind == "dr_grpo":
        return r - r.mean()
    # rloo: each reward minus the mean of the others, written as an explicit loop
    return np.array([r[i] - np.delete(r, i).mean() for i in range(len(r))])


REWARDS = [1.0, 0.0, 0.5, 0.25, 1.0]


@pytest.mark.parametrize("kind", ["grpo", "dr_grpo", "rloo"])
def test_group_advantages_match_numpy(kind):
    got = group_advantages(REWARDS, kind)
    assert got == pytest.approx(numpy_advantages(REWARDS, kind).tolist(), abs=1e-12)


def test_hand_computed_values():
    # two rewards 1 and 0: mean 0.5, sample std sqrt(0.5)
    assert group_advantages([1.0, 0.0], "dr_grpo") == [0.5, -0.5]
    assert group_advantages([1.0, 0.0], "rloo") == [1.0, -1.0]
    s = 0.5**0.5
    assert group_advantages([1.0, 0.0], "grpo", eps=0.0) == pytest.approx([0.5 / s, -0.5 / s])
    # rloo is (G / (G - 1)) times the mean-centred advantage
    assert group_advantages([3.0, 0.0, 0.0], "rloo") == pytest.approx([3.0, -1.5, -1.5])


def test_group_needs_two_and_a_known_kind():
    with pytest.raises(gym.ConfigError, match="at least two"):
        group_advantages([1.0], "grpo")
    with pytest.raises(gym.ConfigError, match="unknown advantage"):
        group_advantages([1.0, 0.0], "ppo")  # type: ignore[arg-type]


def test_training_reward_masks_infra_and_zeroes_flags():
    assert training_reward("pass", 1.0) == 1.0
    assert training_reward("fail", 0.25) == 0.25
    assert training_reward("infra_error", None) is None
    assert training_reward("infra_error", 1.0) is None  # never a reward, whatever was stored
    assert training_reward("pass", 1.0, ["tests_touched"]) == 0.0
    assert verified("pass") and not verified("pass", ["tests_touched"]) and not verified("fail")


def test_a_note_costs_no_reward_but_unverifies():
    from gym._core._models import Flag
    from gym.train import TrainEpisode
    from gym.train._episodes import flag_names

    flags = [Flag(name="network_attempt", gating=False), {"name": "tests_touched"}]
    assert flag_names(flags) == (["tests_touched"], ["network_attempt"])
    noted = TrainEpisode(group="g", outcome="pass", reward=1.0, notes=["network_attempt"])
    assert noted.reward_for_training == 1.0 and not noted.verified
    clean = TrainEpisode(group="g", outcome="pass", reward=1.0)
    assert clean.reward_for_training == 1.0 and clean.verified


def test_batch_advantages_drop_zero_variance_groups_and_infra():
    rewards = [1.0, 0.0, 1.0, None, 0.5, 0.5, None, 1.0, 0.0]
    groups = ["a", "a", "a", "a", "b", "b", "c", "d", "d"]
    adv = advantages(rewards, groups, "grpo")
    # a: three rewards (one infra left out); b: zero variance; c: nothing left; d: two
    expect_a = numpy_advantages([1.0, 0.0, 1.0], "grpo")
    expect_d = numpy_advantages([1.0, 0.0], "grpo")
    assert adv.keep == [True, True, True, False, False, False, False, True, True]
    assert adv.values[:3] == pytest.approx(expect_a.tolist())
    assert adv.values[7:] == pytest.approx(expect_d.tolist())
    assert adv.values[3:7] == [0.0] * 4
    assert (adv.groups, adv.zero_variance_groups, adv.infra_excluded) == (4, 2, 2)
    assert adv.zero_variance_fraction == 0.5
    assert adv.group_std["a"] == pytest.approx(np.std([1.0, 0.0, 1.0], ddof=1))


def test_a_flagged_pass_is_a_zero_in_its_group():
    outcomes = [("pass", 1.0, ["tests_touched"]), ("pass", 1.0, []), ("fail", 0.0, [])]
    rewards = [training_reward(o, r, f) for o, r, f in outcomes]
    adv = advantages(rewards, ["t"] * 3, "dr_grpo")
    assert adv.values == pytest.approx([-1 / 3, 2 / 3, -1 / 3])


def test_lengths_must_agree():
    with pytest.raises(gym.ConfigError, match="2 rewards for 1 group"):
        advantages([1.0, 0.0], ["a"])


def test_a_judge_step_reward_that_cannot_reach_its_judge_gives_none_and_counts_it(tmp_path):
    from gym._grading import Judge
    from gym.train._rewards import judge_step_reward

    judge = Judge(
        base_url="http://127.0.0.1:9/v1",  # nothing listens: refused, retried, then GradingError
        model="m",
        max_retries=1,
        backoff=0.01,
        cache_path=tmp_path / "judge.db",
    )
    reward = judge_step_reward(judge)
    task = gym.Task(id="t", family="learn", prompt="do it")
    said = [{"role": "user", "content": "do it"}, {"role": "assistant", "content": "done"}]
    assert reward(task, said, 0) is None and reward(task, said, 0) is None
    counts = reward.counts
    assert (counts.scored, counts.failed) == (0, 2) and "failed 2 times" in counts.last_error
    assert judge.requests == 4  # asked each time: a failure is never cached


def test_a_judge_step_reward_has_a_stable_name_that_carries_the_judge_step_version():
    from gym._grading import Judge
    from gym.train._rewards import judge_step_reward

    def name(reward: object) -> str:  # how the step-sampling config names it in the train id
        return f"{getattr(reward, '__module__', '?')}.{getattr(reward, '__qualname__', '?')}"

    judge = Judge(base_url="http://127.0.0.1:9/v1", model="m")
    one, two = judge_step_reward(judge), judge_step_reward(judge)
    assert name(one) == name(two) == f"gym.train._rewards.JudgeStepReward[m@{judge.step_version}]"
    other = Judge(base_url="http://127.0.0.1:9/v1", model="m", step_rubric="another rubric")
    assert name(judge_step_reward(other)) != name(one)
    assert repr(one) == f"JudgeStepReward(model='m', step_version='{judge.step_version}')"


def _leaky_verdict(**changes: object) -> dict[str, object]:
    """A verdict (as the adapters hold it) whose visible check passed and hidden one failed."""
    verdict: dict[str, object] = {
        "outcome": "fail",
        "reward": 0.0,
        "components": {
            "visible_check": {"score": 1.0, "passed": True},
            "hidden_check": {"score": 0.0, "passed": False},
        },
        "flags": [],
    }
    return {**verdict, **changes}


def test_verdict_reward_is_the_visible_checks_by_default_as_gym_train_scores_it():
    from gym.train._grpo_collect import verdict_reward

    assert verdict_reward(_leaky_verdict()) == 1.0
    assert verdict_reward(_leaky_verdict(), "verdict") == 0.0
    # no visible component: the verdict's reward
    assert verdict_reward(_leaky_verdict(components={}, reward=0.25)) == 0.25


def test_verdict_reward_zeroes_a_gating_flag_keeps_a_note_and_has_none_for_infra():
    from gym.train._grpo_collect import verdict_reward

    gating = [{"name": "tampered", "gating": True}]
    note = [{"name": "claimed_success", "gating": False}]
    assert verdict_reward(_leaky_verdict(flags=gating)) == 0.0
    assert verdict_reward(_leaky_verdict(flags=note)) == 1.0
    assert verdict_reward(_leaky_verdict(outcome="infra_error", reward=None)) is None
    with pytest.raises(gym.errors.ConfigError):
        verdict_reward(_leaky_verdict(), "hidden")  # type: ignore[arg-type]
