"""Running one episode: an environment, a policy, and the conversation between them."""

from __future__ import annotations

import time
from typing import Any

import gymnasium
from pydantic import BaseModel, Field

from gym._core._errors import InfraError, PolicyError
from gym._core._models import Outcome, Verdict
from gym._core._tools import ToolCall
from gym._envs._env import StepRecord, env_of
from gym._policy import Policy, Turn

__all__ = ["SYSTEM_PROMPT", "EpisodeResult", "action_of", "run_episode"]

SYSTEM_PROMPT = (
    "You are an autonomous agent working inside a Linux container. Use the tools to "
    "inspect and change the environment, one tool call per turn. When the task is done, "
    "call submit. Nobody will answer questions: decide and act."
)


class EpisodeResult(BaseModel):
    """Everything one episode produced."""

    env_id: str
    """Environment id."""
    task_id: str
    """Task id."""
    split: str = ""
    """Task split."""
    seed: int | None = None
    """Reset seed."""
    outcome: Outcome
    """pass, fail or infra_error."""
    reward: float | None = None
    """Reward (None for infra_error)."""
    verdict: Verdict | None = None
    """The full verdict, when grading produced one."""
    end_reason: str = ""
    """submit, a limit, or the infrastructure failure."""
    messages: list[dict[str, Any]] = Field(default_factory=list)
    """The whole conversation in OpenAI chat format."""
    turns: list[Turn] = Field(default_factory=list)
    """Each assistant turn (token ids, logprobs, latency)."""
    steps: list[StepRecord] = Field(default_factory=list)
    """Each environment step (tool call, observation, timing)."""
    export: dict[str, Any] | None = None
    """The final state handed to the grader (for regrading), when the family exports one."""
    duration_s: float = 0.0
    """Wall-clock seconds of the episode, grading included."""


def run_episode(
    env: gymnasium.Env[Any, Any],
    policy: Policy,
    *,
    task_id: str,
    seed: int | None = None,
    system_prompt: str = SYSTEM_PROMPT,
) -> EpisodeResult:
    """Run one episode to its end and return what happened; infra failures are caught.

    Args:
        env: a boxgym environment made with `gym.make` (or `gymnasium.make`).
        policy: the policy that chooses tool calls.
        task_id: the task to run.
        seed: the reset seed.
        system_prompt: the first message of the conversation.
    """
    start = time.monotonic()
    inner = env_of(env)
    messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}]
    turns: list[Turn] = []
    result: dict[str, Any] = {"outcome": "infra_error", "end_reason": ""}
    export: dict[str, Any] | None = None
    try:
        obs, info = env.reset(seed=seed, options={"task": task_id})
        messages.append({"role": "user", "content": obs})
        assert inner.task is not None
        policy.start(inner.task, inner)
        result, export = _loop(env, policy, messages, turns, info["tools"])
    except InfraError as exc:
        verdict = Verdict.model_validate(exc.verdict) if exc.verdict else None
        result = {"outcome": "infra_error", "verdict": verdict, "end_reason": f"infra: {exc}"}
        export = exc.final_state
    except PolicyError as exc:
        result = {"outcome": "infra_error", "end_reason": f"policy: {exc}"}
    finally:
        env.close()
    return EpisodeResult(
        env_id=inner.env_id,
        task_id=task_id,
        split=inner.task.split if inner.task else "",
        seed=seed,
        messages=messages,
        turns=turns,
        steps=list(inner.trace),
        export=export,
        duration_s=time.monotonic() - start,
        **result,
    )


def action_of(call: ToolCall, content: Any) -> dict[str, Any]:
    """The env action for a tool call, carrying the text of the message that made it."""
    text = content if isinstance(content, str) or content is None else str(content)
    return {"name": call.name, "arguments": call.arguments, "id": call.id, "content": text}


def _loop(
    env: gymnasium.Env[Any, Any],
    policy: Policy,
    messages: list[dict[str, Any]],
    turns: list[Turn],
    tools: list[dict[str, Any]],
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Turns until the episode ends; the outcome fields and the exported final state."""
    while True:
        turn = policy.act(messages, tools)
        turns.append(turn)
        messages.append(turn.message)
        content = turn.message.get("content")
        if turn.call is None:
            obs, reward, terminated, truncated, info = env.step(str(content or ""))
            hint = f"\n({turn.parse_error})" if turn.parse_error else ""
            messages.append({"role": "user", "content": obs + hint})
        else:
            obs, reward, terminated, truncated, info = env.step(action_of(turn.call, content))
            messages.append({"role": "tool", "tool_call_id": turn.call.id or "", "content": obs})
        if terminated or truncated:
            verdict = Verdict.model_validate(info["verdict"])
            outcome = {
                "outcome": verdict.outcome,
                "reward": float(reward),
                "verdict": verdict,
                "end_reason": info.get("end_reason", ""),
            }
            return outcome, info.get("final_state")
