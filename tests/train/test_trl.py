"""TRL's GRPOTrainer on boxgym environments (`gym.train.trl_rollout`, `gym.train.trl_reward`).

The assembly of TRL's rollout answer (token ids, the loss mask over tool results, the
reward of an infra error) is checked on plain values; one rollout runs real containers
with the tiny model behind a stand-in trainer (no TRL needed); the ``train`` test runs
TRL 1.16's own GRPOTrainer, installed by scripts/trl-site.sh into ``.trl-site``
(scripts/test-train.sh does it first), and checks that the tiny policy learns
``boxgym/Learn-v0`` from chance to mostly right.
"""

from __future__ import annotations

import importlib.util
import sys
import time
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gym._core._errors import ConfigError, HeldOutError
from gym._store import Store
from gym.train import TrainEpisode, TurnTokens, trl_fields, trl_reward, trl_rollout
from gym.train._grpo_collect import ScoredEpisode

ROOT = Path(__file__).resolve().parents[2]
TRL_SITE = ROOT / ".trl-site"
"""Where scripts/trl-site.sh installs TRL (git-ignored; the venv's torch stays)."""
HAVE_TORCH = all(importlib.util.find_spec(m) for m in ("torch", "transformers", "llguidance"))
EOS = 2
ENV = "boxgym/Learn-v0"


def _scored(
    turns: list[TurnTokens],
    *,
    outcome: str = "pass",
    reward: float | None = 1.0,
    flags: tuple[str, ...] = (),
    task: str = "otter",
) -> ScoredEpisode:
    episode = TrainEpisode(
        episode_id=f"ep-{task}-{len(turns)}-{outcome}",
        group=f"{ENV}/{task}",
        split="train",
        outcome=outcome,
        reward=reward,
        flags=list(flags),
        turns=turns,
    )
    hidden = None if outcome == "infra_error" else outcome == "pass"
    return ScoredEpisode(
        episode=episode, env_id=ENV, task_id=task, policy_version=4, hidden_pass=hidden
    )


def _turn(prompt: list[int], completion: list[int]) -> TurnTokens:
    return TurnTokens(
        prompt=prompt, completion=completion, logprobs=[-0.5 - i for i in range(len(completion))]
    )


# -- the rollout's answer, on plain values ----------------------------------------------


def test_a_multi_turn_episode_is_one_sequence_with_tool_results_masked_out():
    first = _turn([1, 2, 3], [10, 11, EOS])
    second = _turn([1, 2, 3, 10, 11, EOS, 20, 21], [12, EOS])  # 20, 21: the tool result
    fields = trl_fields([_scored([first, second])], eos_token_id=EOS)
    assert fields["prompt_ids"] == [[1, 2, 3]]
    assert fields["completion_ids"] == [[10, 11, EOS, 20, 21, 12, EOS]]
    assert fields["env_mask"] == [[1, 1, 1, 0, 0, 1, 1]]
    assert fields["logprobs"] == [[-0.5, -1.5, -2.5, 0.0, 0.0, -0.5, -1.5]]
    assert fields["boxgym_reward"] == [1.0] and fields["boxgym_outcome"] == ["pass"]
    assert fields["boxgym_policy_version"] == [4] and fields["boxgym_dropped_turns"] == [0]
    assert list(fields)[:4] == ["prompt_ids", "completion_ids", "logprobs", "env_mask"]


def test_tokens_the_grammar_forced_can_be_masked_out_too():
    turn = TurnTokens(prompt=[1, 2], completion=[30, 31, 32, EOS], logprobs=[0.0, -1.2, 0.0, 0.0])
    fields = trl_fields([_scored([turn])], eos_token_id=EOS, mask_forced=True)
    assert fields["env_mask"] == [[0, 1, 0, 0]]
    assert trl_fields([_scored([turn])], eos_token_id=EOS)["env_mask"] == [[1, 1, 1, 1]]


def test_an_infra_error_has_no_reward_and_no_token_in_the_loss_and_a_flag_costs_the_reward():
    infra = _scored([], outcome="infra_error", reward=None)
    flagged = _scored([_turn([1, 2], [7, EOS])], outcome="fail", reward=1.0, flags=("peek",))
    fields = trl_fields([infra, flagged], eos_token_id=EOS)
    assert fields["boxgym_reward"] == [None, 0.0]  # never 0 for the infra error
    assert fields["env_mask"][0] == [0] and fields["completion_ids"][0] == [EOS]
    assert fields["env_mask"][1] == [1, 1]
    assert fields["boxgym_flags"] == [[], ["peek"]]
    assert fields["boxgym_hidden_pass"] == [None, False]


def test_turns_after_a_broken_prefix_are_left_out_and_counted():
    first = _turn([1, 2, 3], [10, EOS])
    rewritten = _turn([1, 2, 9, 9, 10, EOS, 20], [12, EOS])  # does not extend the first
    fields = trl_fields([_scored([first, rewritten])], eos_token_id=EOS)
    assert fields["completion_ids"] == [[10, EOS]] and fields["env_mask"] == [[1, 1]]
    assert fields["boxgym_dropped_turns"] == [1]


def test_trl_reward_passes_the_rewards_on_and_logs_what_was_left_out():
    logged: dict[str, float] = {}
    rewards = trl_reward(
        ["a", "b", "c"],
        boxgym_reward=[1.0, None, 0.0],
        boxgym_outcome=["pass", "infra_error", "fail"],
        boxgym_hidden_pass=[True, None, False],
        boxgym_dropped_turns=[0, 0, 2],
        log_metric=logged.__setitem__,
        task_id=["otter"] * 3,
    )
    assert rewards == [1.0, None, 0.0]
    assert logged == {
        "boxgym/infra_error_rate": pytest.approx(1 / 3),
        "boxgym/hidden_pass_rate": 0.5,
        "boxgym/dropped_turns": 2.0,
    }
    with pytest.raises(ConfigError, match="rollout_func"):
        trl_reward(["a"], answer=["C"])


def test_prompts_map_back_to_training_tasks_only(tmp_path):
    rollout = trl_rollout(ENV, store=f"sqlite:///{tmp_path / 'runs.db'}", tasks=["otter", "maple"])
    assert rollout.task_ids == ["maple", "otter"]
    prompt = next(p for p, t in rollout.prompts.items() if t == "otter")
    assert rollout.task_of(prompt) == "otter"
    assert rollout.task_of([{"role": "user", "content": prompt}]) == "otter"
    with pytest.raises(ConfigError, match="not the prompt of any training task"):
        rollout.task_of("what is behind door C?")
    with pytest.raises(HeldOutError):
        trl_rollout(ENV, store=f"sqlite:///{tmp_path / 'runs.db'}", tasks=["otter-reworded"])


# -- one rollout on real containers, a stand-in trainer ---------------------------------


@pytest.mark.docker
@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch, transformers and llguidance")
def test_a_rollout_runs_real_episodes_with_the_trainers_model(tmp_path):
    from gym._policy._tiny import build_tiny

    loaded = build_tiny(0)
    loaded.model.train()
    trainer = SimpleNamespace(
        model=loaded.model,
        processing_class=loaded.tokenizer,
        state=SimpleNamespace(global_step=12),
        args=SimpleNamespace(temperature=1.0, top_p=1.0),
    )
    store = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    rollout = trl_rollout(ENV, store=store, tasks=["otter", "cedar"])
    by_task = {t: p for p, t in rollout.prompts.items()}
    prompts = [by_task["otter"]] * 3 + [by_task["cedar"]] * 3  # as TRL repeats each G times
    out = rollout(prompts, trainer)

    assert loaded.model.training  # handed back in training mode
    assert [len(out[k]) for k in out] == [6] * len(out)
    (step,) = rollout.steps
    assert step.policy_version == 12 and step.episodes == 6 and step.infra_errors == 0
    rows = {r.id: r for r in store.episodes(step.run_id)}
    assert len(rows) == 6
    for i, episode_id in enumerate(out["boxgym_episode_id"]):
        row = rows[episode_id]
        assert row.task_id == ("otter" if i < 3 else "cedar")
        assert row.policy == "trl" and row.policy_params["policy_version"] == 12
        assert out["boxgym_reward"][i] == row.reward and out["boxgym_outcome"][i] == row.outcome
        (turn,) = store.steps(episode_id)  # Learn: one submit call ends the episode
        assert out["prompt_ids"][i] == turn.prompt_token_ids
        assert out["completion_ids"][i] == turn.completion_token_ids
        # the tokens the grammar forced (logprob 0) are no choice of the policy: masked out
        assert out["env_mask"][i] == [int(lp != 0.0) for lp in turn.logprobs]
        assert 1 <= sum(out["env_mask"][i]) < len(turn.completion_token_ids)
        assert out["completion_ids"][i][-1] == loaded.tokenizer.eos_token_id


# -- TRL's own trainer learns Learn-v0 ---------------------------------------------------


def _trl() -> Any:
    """TRL from the venv or from .trl-site (scripts/trl-site.sh), else skip."""
    if TRL_SITE.is_dir() and str(TRL_SITE) not in sys.path:
        sys.path.append(str(TRL_SITE))  # after the venv: its torch and transformers win
    return pytest.importorskip("trl", reason="needs TRL: scripts/trl-site.sh installs it")


@pytest.mark.train
@pytest.mark.docker
@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch, transformers and llguidance")
@pytest.mark.timeout(600)
def test_trls_grpo_trainer_learns_the_learn_family_through_boxgym(tmp_path, monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is experimental in TRL
    monkeypatch.setenv("TQDM_DISABLE", "1")
    trl = _trl()
    from transformers import TrainerCallback

    from gym._policy._tiny import build_tiny

    generations, mu, group = 12, 2, 8
    loaded = build_tiny(0)
    store = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    rollout = trl_rollout(ENV, store=store, seed=0)

    class StopWhenLearnt(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            if state.global_step % mu == 0 and rollout.steps[-1].mean_reward >= 0.8:
                control.should_training_stop = True

    started = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # transformers' renames, inside TRL
        config = trl.GRPOConfig(
            output_dir=str(tmp_path / "out"),
            per_device_train_batch_size=len(rollout.task_ids) * group,  # all 32 in one step
            num_generations=group,
            num_iterations=mu,
            max_steps=mu * generations,
            learning_rate=3e-3,  # boxgym's defaults (gym train grpo), but mu = 2
            lr_scheduler_type="constant",
            weight_decay=0.0,
            max_grad_norm=0.0,
            epsilon=0.2,
            epsilon_high=0.28,
            beta=0.0,
            loss_type="dapo",  # token_mean
            scale_rewards="group",
            temperature=1.0,
            activation_checkpointing=False,
            use_cpu=True,
            seed=0,
            report_to="none",
            save_strategy="no",
            disable_tqdm=True,
            logging_steps=mu,
        )
        trainer = trl.GRPOTrainer(
            model=loaded.model,
            processing_class=loaded.tokenizer,
            reward_funcs=trl_reward,
            train_dataset=rollout.dataset(),
            rollout_func=rollout,
            args=config,
            callbacks=[StopWhenLearnt()],
        )
        trainer.train()
    seconds = time.monotonic() - started

    rewards = [s.mean_reward for s in rollout.steps]
    print(f"TRL on {ENV}: mean reward per generation {rewards}, {seconds:.0f} s")
    assert rewards[0] <= 0.3 and rewards[-1] >= 0.8, rewards
    # each generation is a run of real episodes, sampled by the weights TRL had updated
    assert [s.policy_version for s in rollout.steps] == [mu * i for i in range(len(rewards))]
    for step in rollout.steps:
        episodes = store.episodes(step.run_id)
        assert len(episodes) == 32 and {e.split for e in episodes} == {"train"}
        assert {e.policy_params["policy_version"] for e in episodes} == {step.policy_version}
    logged = [h["rewards/trl_reward/mean"] for h in trainer.state.log_history if "reward" in h]
    assert logged[0] == pytest.approx(rewards[0])  # TRL trained on the rewards boxgym gave
