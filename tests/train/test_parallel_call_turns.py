"""A turn that made several tool calls trains as one turn: its tokens once.

The runner stores a turn's tokens on its first call's step only; reading a collection
back (GRPO's, step sampling's, `TrainEpisode.from_store`) takes one token record per
policy turn, so a policy writing two calls in one message neither aborts the
collection nor trains its turn twice.
"""

from __future__ import annotations

from typing import Any

import pytest

from gym._core._models import Task
from gym._core._tools import ToolCall
from gym._envs._env import ContainerEnv
from gym._policy._base import Policy, Turn
from gym._store import Store
from gym.train import TrainEpisode, grpo_samples
from gym.train._grpo_collect import collect
from gym.train._steps import read_step_collected

ENV = "boxgym/LearnLock-v0"
COMPLETION = [5, 6, 2]


class TwoCallsFirst(Policy):
    """A stand-in model: its first message makes two press calls, later ones one each.

    Each prompt is the previous prompt, its completion and two environment tokens (the
    prefix property holds), so one episode is one sample.
    """

    name = "twocalls"

    def start(self, task: Task, env: ContainerEnv[Any]) -> None:
        self.prompt = [1, 2, 3]
        self.turn = 0

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        self.turn += 1
        calls = [ToolCall(name="press", arguments={"button": "left"}, id=f"c{self.turn}a")]
        if self.turn == 1:
            calls.append(ToolCall(name="press", arguments={"button": "right"}, id="c1b"))
        prompt = list(self.prompt)
        self.prompt = prompt + COMPLETION + [9, 9]
        return Turn(
            message={"role": "assistant", "content": "pressing"},
            calls=calls,
            prompt_token_ids=prompt,
            completion_token_ids=COMPLETION,
            logprobs=[-1.0, -1.0, -0.1],
        )


@pytest.mark.docker
@pytest.mark.timeout(300)
def test_a_turn_with_two_calls_is_collected_and_trained_once(tmp_path, engine):
    store = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    got = collect(
        store,
        envs=[ENV],
        tasks=["otter"],
        group_size=2,
        seed=0,
        version=0,
        policy="twocalls",
        policy_params={},
        policy_factory=TwoCallsFirst,
        reward="verdict",
        concurrency=2,
        label="pytest parallel calls",
    )
    assert len(got.episodes) == 2
    for scored in got.episodes:
        episode_id = scored.episode.episode_id
        calls = [s.tool for s in store.steps(episode_id)]
        assert calls == ["press"] * 3  # two calls in the first message, one in the second
        turns = scored.episode.turns
        assert [t.completion for t in turns] == [COMPLETION, COMPLETION]  # one per turn
        assert turns[1].prompt == turns[0].prompt + COMPLETION + [9, 9]
        assert TrainEpisode.from_store(store, episode_id).turns == turns
    # one sample per episode, each turn's sampled tokens under the loss mask once
    varied = [e.episode.model_copy(update={"reward": float(i)}) for i, e in enumerate(got.episodes)]
    built = grpo_samples(varied)
    assert built.prefix_breaks == 0 and len(built.samples) == 2
    for sample in built.samples:
        assert sample.turns == [0, 1] and sample.sampled == 2 * len(COMPLETION)
        assert sample.input_ids == [1, 2, 3, *COMPLETION, 9, 9, *COMPLETION]
    # step sampling reads the same collection back through the same path
    assert len(read_step_collected(store, got.run_id).episodes) == 2
