"""The token counts a run stores are counts: a server's absurd usage never loses an episode.

A turn keeps only whole counts in [0, `TOKENS_MAX`); an episode's sums are capped at the
largest SQLite INTEGER, so its commit, after grading, cannot fail on them (before: a
usage of 10**30 tokens raised OverflowError at the commit, the episode lost and the
run dead). On the toy family (no Docker).
"""

from __future__ import annotations

from typing import Any

import pytest
from toy_env import ENV_ID

from gym import OraclePolicy
from gym._policy._base import TOKENS_MAX, Turn
from gym._run._executor import LocalExecutor
from gym._run._runner import RunConfig, _tokens, run
from gym._store import Store


class Boasting(OraclePolicy):
    """The oracle's turns, each with the usage a hostile server reports."""

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        data = super().act(messages, tools).model_dump()
        data["usage"] = {"prompt_tokens": 10**30, "completion_tokens": 7, "total_tokens": -5}
        return Turn.model_validate(data)


@pytest.fixture
def store(tmp_path):
    s = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    yield s
    s.close()


def test_an_absurd_usage_is_left_out_and_the_episode_committed(store):
    config = RunConfig(envs=[ENV_ID], policy="oracle", limit=1)
    state = run(config, store=store, policy_factory=Boasting, executor=LocalExecutor(1))
    assert state.done == 1 and state.passed == 1
    [episode] = store.episodes(config.run_id)
    assert episode.outcome == "pass"
    assert episode.prompt_tokens == 0
    turns = [m for m in episode.messages if m["role"] == "assistant"]
    assert turns and episode.completion_tokens == 7 * len(turns)


def test_an_episodes_token_sum_stops_at_the_stores_largest_integer():
    assert _tokens([TOKENS_MAX - 1] * 2000) == 2**63 - 1
    assert _tokens([3, 4]) == 7
