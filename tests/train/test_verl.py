"""Contract: verl 0.9.1's agent-loop machinery drives a boxgym episode (real containers).

The loop is made as verl's ``AgentLoopWorker`` makes it (its registry entry through
``hydra.utils.instantiate``); the model is a stand-in ``server_manager`` that answers
each turn with scripted text as token ids, so verl's own chat templating, tool parser
and token merging run. Needs verl beside the venv: scripts/test-adapters.sh.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest

from environments.learn import hidden_answer
from gym._core._errors import HeldOutError
from gym._policy._parse import format_call
from gym._policy._tiny import tiny_tokenizer

pytest.importorskip("verl")
with warnings.catch_warnings():  # verl's own imports warn (ray.experimental, ...): not ours
    warnings.simplefilter("ignore", DeprecationWarning)
    import hydra
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import (
        DictConfigWrap,
        ToolListWrap,
        _agent_loop_registry,
    )
    from verl.workers.rollout.replica import TokenOutput

    from gym.train._verl import AGENT_NAME, BoxgymAgentLoop, _episodes, verl_rows

pytestmark = [pytest.mark.docker, pytest.mark.adapters]

ENV_ID = "boxgym/Learn-v0"


class ScriptedServer:
    """verl's ``server_manager`` with a script for a model: one text per turn."""

    def __init__(self, tokenizer: Any, texts: list[str]) -> None:
        self.tokenizer, self.texts = tokenizer, list(texts)
        self.prompts: list[str] = []

    async def generate(self, request_id: str, *, prompt_ids: list[int], **_: Any) -> TokenOutput:
        self.prompts.append(self.tokenizer.decode(prompt_ids))
        ids = self.tokenizer.encode(self.texts.pop(0), add_special_tokens=False)
        ids.append(self.tokenizer.eos_token_id)
        return TokenOutput(token_ids=ids, log_probs=[-0.5] * len(ids), stop_reason="completed")


def _config() -> Any:
    multi_turn = {
        "format": "hermes",
        "max_user_turns": 4,
        "max_assistant_turns": 4,
        "max_parallel_calls": 1,
        "max_tool_response_length": 256,
        "tool_response_truncate_side": "middle",
    }
    rollout = {
        "multi_turn": multi_turn,
        "prompt_length": 4096,
        "response_length": 1024,
        "full_determinism": False,
    }
    return OmegaConf.create({"actor_rollout_ref": {"rollout": rollout}, "data": {}})


def _play(task: str, texts: list[str], **extra: Any) -> tuple[Any, ScriptedServer]:
    """One trajectory through the loop as verl's worker makes and runs it (in its loop).

    ``extra``: more of the row's ``extra_info`` (``env_id``, ``reward``).
    """
    tokenizer = tiny_tokenizer()
    server = ScriptedServer(tokenizer, texts)
    config = _config()

    async def trajectory() -> Any:
        loop = hydra.utils.instantiate(
            config=_agent_loop_registry[AGENT_NAME],
            trainer_config=DictConfigWrap(config=config),
            server_manager=server,
            tokenizer=tokenizer,
            processor=None,
            hf_model_type=None,
            dataset_cls=None,
            data_config=DictConfigWrap(config.data),
            tools=ToolListWrap([]),
        )
        assert isinstance(loop, BoxgymAgentLoop)
        info = {"env_id": ENV_ID, "task": task, "seed": 0, **extra}
        row = {"raw_prompt": [], "extra_info": info}
        return await loop.run({"temperature": 1.0}, **row)

    return asyncio.run(trajectory()), server


def _submit(choice: str) -> str:
    return "The key opens this door.\n" + format_call("submit", {"choice": choice})


def test_the_gold_answer_through_verls_agent_loop_gets_reward_1(engine):
    answer = hidden_answer(_task("otter"))
    output, server = _play("otter", [_submit(answer)])
    assert output.reward_score == 1.0
    assert output.extra_fields["reward_extra_info"] == {
        "boxgym_pass": 1.0,
        "boxgym_hidden_pass": 1.0,
        "boxgym_flags": 0.0,
    }
    assert "cedar" not in server.prompts[0] and "otter otter" in server.prompts[0]
    # the model's tokens are trained on (mask 1), the tool's answer is not (mask 0)
    assert output.response_mask[0] == 1 and output.response_mask[-1] == 0
    assert len(output.response_ids) == len(output.response_mask) == len(output.response_logprobs)
    assert not _episodes  # the episode was closed with the trajectory


def test_a_turn_without_a_call_ends_the_trajectory_graded_as_it_stands(engine):
    output, server = _play("maple", ["Which door, I wonder?"])
    assert len(server.prompts) == 1  # no call: verl's loop ends the trajectory
    assert output.reward_score == 0.0
    assert output.extra_fields["reward_extra_info"]["boxgym_pass"] == 0.0


def test_a_tool_result_is_the_next_observation_and_a_wrong_door_scores_0(engine):
    bad = format_call("submit", {"door": "A"})  # the wrong argument name: an error, not an end
    wrong = "A" if hidden_answer(_task("cedar")) != "A" else "B"
    output, server = _play("cedar", [bad, _submit(wrong)])
    assert len(server.prompts) == 2 and "Error" in server.prompts[1]
    assert output.reward_score == 0.0


@pytest.mark.parametrize(("source", "reward"), [("visible", 1.0), ("verdict", 0.0)])
def test_the_reward_is_the_visible_checks_by_default_and_the_hidden_ones_are_watched(
    engine, source, reward
):
    # LearnLeaky's visible check accepts "A"; the hidden one wants the task's answer
    leaky = "boxgym/LearnLeaky-v0"
    assert hidden_answer(_task("cedar", leaky)) != "A"
    output, _ = _play("cedar", [_submit("A")], env_id=leaky, reward=source)
    assert output.reward_score == reward
    info = output.extra_fields["reward_extra_info"]
    assert info["boxgym_pass"] == 0.0 and info["boxgym_hidden_pass"] == 0.0


def test_a_held_out_task_is_refused_and_rows_name_only_training_tasks():
    with pytest.raises(HeldOutError):
        _play("otter-reworded", [])
    rows = verl_rows(ENV_ID)
    assert sorted(r["extra_info"]["task"] for r in rows) == ["cedar", "falcon", "maple", "otter"]
    assert {r["agent_name"] for r in rows} == {AGENT_NAME}
    assert {r["extra_info"]["reward"] for r in rows} == {"visible"}


def _task(task_id: str, env_id: str = ENV_ID) -> Any:
    import gym

    env = gym.make(env_id)
    try:
        return env.unwrapped.task_by_id(task_id)
    finally:
        env.close()
