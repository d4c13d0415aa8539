"""A fork refused for the agent's state: its K branches are failures, never left out.

The agent's own state (more files or exported variables than a fork copies:
`ExportTooLarge`) is the agent's outcome: the fork's K branches are stored as ``fail``
with reward 0 and the gating flag `UNFORKABLE`, so that making its state unforkable is
never better for the policy than K failing branches. A fault outside the sandbox (the
engine, a container gone) leaves the fork out. Pure: a fake environment stands in.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gym._core._errors import ExportTooLarge, GymError, SandboxUnavailable
from gym._envs._env import StepRecord
from gym._policy import Turn
from gym._policy._scripted import NoopPolicy
from gym._run._rollout import EpisodeResult
from gym._run._runner import RunConfig, _run_row, plan
from gym._store import Store
from gym.train._episodes import TrainEpisode
from gym.train._grpo_collect import ScoredEpisode
from gym.train._samples import TurnTokens
from gym.train._steps import (
    UNFORKABLE,
    Branch,
    StepConfig,
    _Forking,
    _Trees,
    read_step_collected,
    step_samples,
)

ENV, TASK = "boxgym/LearnSteps-v0", "drawers-08"


class _Env:
    """What `_Forking` reads of its parent's environment; its fork raises ``error``."""

    def __init__(self, error: GymError, steps: int) -> None:
        self.error = error
        self.env_id = ENV
        self.task = SimpleNamespace(id=TASK, split="train")
        self.np_random_seed = 7
        self.user_transcript: list[dict[str, Any]] = []
        self.trace = [StepRecord(call=None, observation=f"out {n}") for n in range(steps)]
        self.forks: list[tuple[int, bool, str | None]] = []

    def fork(self, k: int, *, training: bool = False, parent_id: str | None = None) -> list[Any]:
        self.forks.append((k, training, parent_id))
        raise self.error


def _forking(error: GymError, turns: int = 2) -> tuple[_Forking, _Env]:
    forking = _Forking(NoopPolicy, StepConfig(branches=3), "P")
    env = _Env(error, turns)
    forking.env = env  # type: ignore[assignment]
    forking.turns = [
        Turn(
            message={"role": "assistant", "content": f"t{n}"},
            prompt_token_ids=[100 + n],
            completion_token_ids=[n, 2],
            logprobs=[-0.5, -0.5],
        )
        for n in range(turns)
    ]
    forking.marks = list(range(turns))  # one step a turn
    return forking, env


def test_a_fork_refused_for_the_agents_state_makes_k_failing_branches():
    forking, env = _forking(ExportTooLarge("the files under /tmp are over the fork cap"))
    messages = [{"role": "user", "content": "go"}]
    assert forking._fork(messages, [], 3)  # counted as made (branches_per_parent too)
    made = forking.finish()
    assert [(line.parent_id, line.fork_step, line.branch) for line, _ in made] == [
        ("P", 2, 0),
        ("P", 2, 1),
        ("P", 2, 2),
    ]
    for _, result in made:
        assert (result.outcome, result.reward, result.end_reason) == ("fail", 0.0, UNFORKABLE)
        assert result.verdict is not None and result.verdict.outcome == "fail"
        [flag] = result.verdict.flags
        assert flag.name == UNFORKABLE and flag.gating and "fork cap" in flag.detail
        # the parent's trajectory so far, and nothing of its own
        assert [t.message["content"] for t in result.turns] == ["t0", "t1"]
        assert [s.observation for s in result.steps] == ["out 0", "out 1"]
        assert result.step_turns == [0, 1] and result.messages == messages
        assert TrainEpisode.from_result(result).reward_for_training == 0.0
    assert len({result.seed for _, result in made}) == 3  # each branch's own seed
    assert env.forks == [(3, True, "P")]  # training data: held-out tasks refused


@pytest.mark.parametrize("fault", [SandboxUnavailable("container gone"), GymError("engine")])
def test_a_fault_outside_the_sandbox_leaves_the_fork_out(fault: GymError):
    forking, _ = _forking(fault)
    assert not forking._fork([], [], 3)
    assert forking.finish() == []


def _turn(n: int) -> TurnTokens:
    return TurnTokens(prompt=[100 + n] * 4, completion=[10 * n + 1, 2], logprobs=[-0.5] * 2)


def _scored(eid: str, reward: float, turns: int = 3, flags: list[str] | None = None) -> Any:
    episode = TrainEpisode(
        episode_id=eid,
        group=f"{ENV}/{TASK}",
        split="train",
        outcome="pass" if reward else "fail",
        reward=reward,
        flags=flags or [],
        turns=[_turn(n) for n in range(turns)],
    )
    return ScoredEpisode(
        episode=episode, env_id=ENV, task_id=TASK, policy_version=0, hidden_pass=bool(reward)
    )


def _credits(episodes: list[Any], branches: dict[str, Branch]) -> dict[tuple[str, int], float]:
    built = step_samples(episodes, branches, "dr_grpo")
    return {(s.episode_id, s.turns[0]): s.advantage for s in built.samples}


def test_a_refused_fork_credits_the_parent_as_k_failing_branches_and_trains_none_of_them():
    # P (reward 1) forked before its turn 2; Q (0) is the task's other parent
    def line(i: int, refused: bool) -> Branch:
        return Branch(parent_id="P", fork_step=2, branch=i, turn=2, refused=refused)

    refused = [_scored(f"r{i}", 0.0, turns=2, flags=[UNFORKABLE]) for i in range(2)]
    failed = [_scored(f"f{i}", 0.0) for i in range(2)]
    parents = [_scored("P", 1.0), _scored("Q", 0.0)]
    got = _credits(parents + refused, {f"r{i}": line(i, True) for i in range(2)})
    real = _credits(parents + failed, {f"f{i}": line(i, False) for i in range(2)})
    unforked = _credits(parents, {})
    # the parent's turns get what K failing branches give them; the refused train nothing
    assert {k: v for k, v in got.items() if k[0] in "PQ"} == pytest.approx(
        {k: v for k, v in real.items() if k[0] in "PQ"}
    )
    assert not {e for e, _ in got} & {"r0", "r1"}
    # the turn that led to the unforkable state is worse off than with no fork at all
    assert got[("P", 1)] < unforked[("P", 1)]
    # branch credit: a fork of K failures has no spread, nothing trains (and nothing raises)
    assert not step_samples(
        parents + refused, {f"r{i}": line(i, True) for i in range(2)}, credit="branch"
    ).samples


def test_refused_branches_are_stored_and_read_back_as_flagged_failures(tmp_path: Path):
    store = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    config = RunConfig(envs=[ENV], policy="noop", k=1, seed=1, tasks=[TASK])
    [job] = plan(config)
    store.start_run(_run_row(config), planned=1)
    forking, _ = _forking(ExportTooLarge("the shell's exported variables are over 8 MiB"))
    forking.parent_id = job.episode_id
    forking._fork([{"role": "user", "content": "go"}], [], 3)
    branches = forking.finish()
    parent = EpisodeResult(env_id=ENV, task_id=TASK, split="train", outcome="pass", reward=1.0)
    _Trees(config, store, NoopPolicy, StepConfig(branches=3)).commit(job, parent, 1, branches)
    collected = read_step_collected(store, config.run_id)
    assert len(collected.branches) == 3
    for eid, branch in collected.branches.items():
        assert branch.refused and branch.fork_step == 2
        scored = next(e for e in collected.episodes if e.episode.episode_id == eid)
        assert scored.training_reward == 0.0 and scored.episode.flags == [UNFORKABLE]
